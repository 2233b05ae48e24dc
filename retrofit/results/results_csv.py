"""A results CSV (`retrofit_rmse.csv`) read and indexed by its unit key, and the reference a sweep is
checked against.

`read_results` reads a file or text and refuses, in one line, what is not a readable CSV; `keyed`
indexes it by `record.KEY` and refuses a missing key column, a non-integer seed, a unit listed twice
or text in a number column. `read_reference` reads a `Reference`: the working tree's file or, with a
commit, the file as committed there, read before a run writes.
"""

import io
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.results.record import NUMERIC
from retrofit.unit_key import KEY, label


@dataclass(frozen=True)
class Reference:
    """A reference table, where it was read (`source`, e.g. `<path> at HEAD (3bab85c)`), whether a
    check must cover all its rows (`require_all`) and whether the grid changed on purpose."""

    frame: pd.DataFrame
    source: str = "a table in memory"
    require_all: bool = False
    grid_changed: bool = False


def keyed(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """`frame` indexed by `KEY`; RunnerError naming `name` when a key column is absent, a seed is not
    an integer, a key occurs twice or a number column holds text."""
    absent = [column for column in KEY if column not in frame.columns]
    if absent:
        raise RunnerError(f"{name} lacks the columns {absent}; pass a retrofit_rmse.csv")
    seeds = pd.to_numeric(frame["seed"], errors="coerce")
    if seeds.isna().any() or (seeds % 1 != 0).any():
        raise RunnerError(f"{name} has a seed that is not an integer; pass a retrofit_rmse.csv")
    numeric = pd.api.types.is_numeric_dtype
    texts = [c for c in frame.columns if c in NUMERIC and not (numeric(frame[c]) or frame[c].isna().all())]
    if texts:
        raise RunnerError(f"{name}: column {texts[0]!r} holds text where numbers belong; pass a retrofit_rmse.csv")
    hparams = frame["hparams"].map(lambda h: "" if pd.isna(h) else str(h))
    frame = frame.assign(hparams=hparams, seed=seeds.astype(int)).set_index(KEY)
    repeated = frame.index[frame.index.duplicated()]
    if len(repeated):
        raise RunnerError(f"{name} lists {len(repeated)} units twice, e.g. {label(repeated[0])}")
    return frame


def read_results(source: Path | str | io.StringIO, name: str) -> pd.DataFrame:
    """The results CSV `source` (a path or text); RunnerError naming `name` when it is missing, not a
    file, empty, not UTF-8 text or not a CSV."""
    if isinstance(source, str | Path) and not Path(source).is_file():
        why = "does not exist" if not Path(source).exists() else "is not a file"
        raise RunnerError(f"{name} {source} {why}; pass a retrofit_rmse.csv")
    try:
        return pd.read_csv(source, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        what = f"{name} {source}" if isinstance(source, str | Path) else name
        raise RunnerError(f"{what} is not a readable CSV ({str(err).splitlines()[0][:200]})") from None


def _git(path: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(path.parent), *args], capture_output=True, text=True, check=False)
    except OSError:  # no git on this machine
        return None


def read_reference(
    path: Path, commit: str | None = None, *, require_all: bool = False, grid_changed: bool = False
) -> Reference:
    """The CSV at `path`: as in the working tree (`commit` None), or as committed at `commit` (e.g.
    `HEAD`) in the git checkout holding it — outside any checkout, the file as it is, and the source
    says so; without `git` on PATH a `commit` is refused (the checkout could not be told apart).
    Its keys are checked now, before any sweep runs. RunnerError when the file (or its committed
    version) does not exist, and for a `commit` that is empty or starts with `-` (an option to git)."""
    path = Path(path).resolve()
    if commit is not None and (not commit or commit.startswith("-")):
        why = "is empty" if not commit else "starts with '-', which git reads as an option (--output=<file> writes one)"
        raise RunnerError(
            f"reference_commit={commit!r} {why}; name a commit (HEAD, a hash or a tag), or null for the working tree"
        )
    shown = _git(path, "show", f"{commit}:./{path.name}") if commit is not None else None
    if commit is not None and shown is None:
        raise RunnerError(
            f"reference_commit={commit} needs git, which is not on PATH; put git on PATH, "
            "or pass reference_commit=null to read the working tree"
        )
    if shown is not None and shown.returncode == 0:
        source = f"{path} at {commit} ({_git(path, 'rev-parse', '--short', commit).stdout.strip()})"
        frame = read_results(io.StringIO(shown.stdout), f"reference {source}")
    elif shown is not None and "not a git repository" not in shown.stderr:
        reason = shown.stderr.strip().splitlines()[-1] if shown.stderr.strip() else "git show failed"
        raise RunnerError(
            f"reference {path} at {commit}: {reason}; commit it, or pass reference_commit=null to read the working tree"
        )
    else:
        if not path.is_file():
            raise RunnerError(f"reference {path} does not exist; pass reference=<a retrofit_rmse.csv to compare with>")
        source = f"{path} ({'working tree' if commit is None else f'working tree: not a git checkout, no {commit}'})"
        frame = read_results(path, f"reference {path}")
    keyed(frame, f"reference {source}")
    return Reference(frame, source, require_all, grid_changed)
