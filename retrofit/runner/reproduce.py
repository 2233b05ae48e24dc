"""Does a fresh `retrofit_rmse.csv` reproduce the reference (the committed one, read before the run)?

Rows are matched on `KEY`; a row reproduces when its `rmse` is within `RTOL` relative of the
reference's. The CPU path is deterministic (same code, versions, host file, settings and thread
count give the same bits), so `RTOL` only absorbs the decimal round trip of the CSV. A row that is
only in one of the two files fails the check as well. The reference is read before the sweep runs
(`read_reference`): the file as committed (`git show HEAD:<file>`), or, outside a git checkout or
for a file git does not track, the file as it is then. So a failed run, which has overwritten the
file, cannot make the next run compare with itself.
"""

import io
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic

KEY = ["host", "dataset", "seed", "variant", "hparams"]
RTOL = 1e-9
"""Relative tolerance on `rmse`."""


@dataclass(frozen=True)
class Reproduction:
    """The outcome: rows within `RTOL`, rows compared, the largest relative |ΔRMSE|, and the keys of
    rows that differ, are missing (only in the reference) or are extra (only in the new file)."""

    within: int
    total: int
    max_rel: float
    differing: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.differing or self.missing or self.extra)

    def line(self) -> str:
        """`reproduced: <k>/<n> rows within <tol> (max rel |ΔRMSE| <x>)`, plus what failed."""
        text = f"reproduced: {self.within}/{self.total} rows within {RTOL:g} (max rel |ΔRMSE| {self.max_rel:.3g})"
        for label, keys in (("differing", self.differing), ("missing", self.missing), ("extra", self.extra)):
            if keys:
                text += f"; {len(keys)} {label}: {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"
        return text


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.assign(hparams=frame["hparams"].fillna("").astype(str), seed=frame["seed"].astype(int))
    return frame.set_index(KEY)


def _label(key: tuple) -> str:
    return "/".join(f"{name}={value}" for name, value in zip(KEY, key, strict=True) if value != "")


def compare(new: pd.DataFrame, reference: pd.DataFrame) -> Reproduction:
    """`new` (rows of `retrofit_rmse.csv`) against `reference`, row by row on `KEY`."""
    new, reference = _keyed(new), _keyed(reference)
    both = new.index.intersection(reference.index)
    rel = (new.loc[both, "rmse"] - reference.loc[both, "rmse"]).abs() / reference.loc[both, "rmse"].abs()
    differing = rel.index[~(rel <= RTOL)]
    return Reproduction(
        within=int((rel <= RTOL).sum()),
        total=len(new.index.union(reference.index)),
        max_rel=float(rel.max()) if len(rel) else float("nan"),
        differing=tuple(_label(k) for k in differing),
        missing=tuple(_label(k) for k in reference.index.difference(new.index)),
        extra=tuple(_label(k) for k in new.index.difference(reference.index)),
    )


def read_reference(path: Path) -> pd.DataFrame:
    """The CSV at `path` as committed (HEAD of the git checkout holding it), else as it is now.

    RunnerError when it is neither committed nor a file.
    """
    path = Path(path).resolve()
    try:
        shown = subprocess.run(
            ["git", "-C", str(path.parent), "show", f"HEAD:./{path.name}"], capture_output=True, text=True, check=False
        )
    except OSError:  # no git on this machine: the file as it is
        shown = None
    if shown is not None and shown.returncode == 0:
        return pd.read_csv(io.StringIO(shown.stdout))
    if not path.is_file():
        raise RunnerError(f"reference {path} does not exist; pass reference=<a retrofit_rmse.csv to compare with>")
    return pd.read_csv(path)


def verify(results_dir: Path, reference: pd.DataFrame) -> Reproduction:
    """Compare `<results_dir>/retrofit_rmse.csv` with `reference` (see `read_reference`), print the
    line and write it to `<results_dir>/reproduction.txt`. RunnerError (a non-zero exit in an entry
    point) unless every row reproduced."""
    outcome = compare(pd.read_csv(Path(results_dir) / "retrofit_rmse.csv"), reference)
    write_text_atomic(Path(results_dir) / "reproduction.txt", outcome.line() + "\n")
    print(outcome.line())
    if not outcome.ok:
        raise RunnerError(f"not reproduced ({outcome.line()}); if the change is intended, commit the new CSV")
    return outcome
