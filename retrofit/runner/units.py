"""Units of work and their result files (TabArena-style: one file per unit, its path says what ran).

A unit is one variant (with its hyper-parameter overrides) of one case (host × dataset × seed)
under one set of settings; its file is

    <runs_dir>/host=<host>/dataset=<dataset>/seed=<seed>/settings=<digest>/variant=<variant>[,<k>=<v>...].json

where `<digest>` covers every setting that changes a number (`retrofit.runner.case.Case.settings`),
so runs of different settings never replace each other's files. The file holds one row, the
unit's `fingerprint` (those settings, the resolved variant, a timed unit's timing settings, the
library versions and the code's meaning: `environment()`) and a `row_digest` of the row. A unit
is finished when its valid file carries its fingerprint; a stale one is recomputed; a damaged one
(unparsable, not an object, lacking a column, not matching its digest) is never served. Writes
are atomic (`retrofit.io`): concurrent and interrupted runs leave whole files or none.
"""

import ast
import functools
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.runner.aggregate import COLUMNS

log = logging.getLogger(__name__)

BASELINE = "baseline"
"""The variant that patches nothing; its prediction is every unit's reference."""


@dataclass(frozen=True, order=True)
class UnitKey:
    """Identity of one unit of work; `hparams` is a sorted tuple of (name, value) overrides,
    `settings` the digest of the case's run settings (empty: none, as in hand-made keys)."""

    host: str
    dataset: str
    seed: int
    variant: str
    hparams: tuple[tuple[str, Any], ...] = ()
    settings: str = ""

    def relpath(self) -> Path:
        """Where this unit's result file lives, relative to the runs directory."""
        variant = ",".join([f"variant={self.variant}", *(f"{k}={v}" for k, v in self.hparams)])
        settings = (f"settings={self.settings}",) if self.settings else ()
        return Path(f"host={self.host}", f"dataset={self.dataset}", f"seed={self.seed}", *settings, f"{variant}.json")


def hparams_key(hparams: Mapping[str, Any], prefix: str = "") -> tuple[tuple[str, Any], ...]:
    """The hashable, order-free form of a (nested) hyper-parameter override dict:
    `{"tau": {"c": 0.01}}` -> `(("tau.c", 0.01),)`."""
    items: list[tuple[str, Any]] = []
    for name, value in dict(hparams).items():
        if isinstance(value, Mapping):
            items.extend(hparams_key(value, f"{prefix}{name}."))
        else:
            items.append((f"{prefix}{name}", value))
    return tuple(sorted(items))


def reject_duplicates(keys: Iterable[UnitKey]) -> None:
    """Raise RunnerError listing every key that occurs more than once (before anything runs)."""
    seen: set[UnitKey] = set()
    duplicates = sorted({k for k in keys if k in seen or seen.add(k)})
    if duplicates:
        listed = ", ".join(str(k.relpath()) for k in duplicates)
        raise RunnerError(f"duplicate units in this sweep: {listed}; remove the repeated override values")


def fingerprint(parts: Mapping[str, Any]) -> str:
    """A short digest of what a result depends on (JSON-serialisable `parts`)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


PACKAGE = Path(__file__).resolve().parents[1]
"""The `retrofit` package directory, whose source `code_digest` covers."""


def _meaning(source: str) -> str:
    """`ast.dump` of a module's source without its docstrings (module, class and function): what the
    code does, not what it says; comments never reach the tree."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0].value if node.body and isinstance(node.body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


NOT_NUMBERS = (
    "jobs/",
    "runtimes.py",
    "pretrain/",
    "removal/",
    "audit/",
    *(
        f"runner/{name}.py"
        for name in (
            "aggregate",
            "bootstrap",
            "collect",
            "compare",
            "compose",
            "console",
            "guard",
            "hydra_callbacks",
            "plots",
            "schema",
            "sweep_cost",
            "tables",
            "tau_sweep",
        )
    ),
)
"""The parts of the package (paths relative to it) that compute no unit's numbers: the other jobs,
and the runner's reading, checking, aggregating and showing. `code_digest` leaves them out."""


@functools.cache
def code_digest(root: Path = PACKAGE) -> str:
    """sha256 over the meaning (`_meaning`) of every `*.py` file under `root` that computes numbers
    (all but `NOT_NUMBERS`), with its relative path, first 16 hex digits: a change to what that code
    does makes every stored unit stale; an edit of a comment or docstring, or of how results are
    shown, does not."""
    digest = hashlib.sha256()
    paths = [path for path in root.rglob("*.py") if not path.relative_to(root).as_posix().startswith(NOT_NUMBERS)]
    for path in sorted(paths):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + _meaning(path.read_text()).encode() + b"\0")
    return digest.hexdigest()[:16]


LIBRARIES = ("tabpfn", "torch", "numpy", "scikit-learn")
"""The libraries whose installed versions are part of every unit's identity."""


def environment() -> dict[str, str]:
    """The library versions (`LIBRARIES`) and code digest every fingerprint includes (the versions as
    installed, read without importing tabpfn or torch: reading a finished store stays light)."""
    return {name: version(name) for name in LIBRARIES} | {"code": code_digest()}


def file_digest(path: Path) -> str:
    """sha256 of a file's content (a host checkpoint, a CSV), first 16 hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


ROW_DIGEST = "row_digest"
"""The key under which a unit file stores the digest of its own row."""


def row_digest(row: Mapping[str, Any]) -> str:
    """sha256 of `row` as JSON (sorted keys, as it reads back from a unit file), first 16 hex digits."""
    return hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()[:16]


class UnitStore:
    """Result files under `runs_dir`: read a finished unit (verified), write one atomically.

    `columns`: the result columns every row must hold (those of `retrofit_rmse.csv`).
    """

    def __init__(self, runs_dir: Path, columns: Iterable[str] = COLUMNS):
        self.runs_dir = Path(runs_dir)
        self.columns = tuple(columns)

    def path(self, key: UnitKey) -> Path:
        return self.runs_dir / key.relpath()

    def read(self, path: Path) -> dict[str, Any]:
        """The verified row of the unit file `path` (without its digest); RunnerError naming the
        file when it cannot be parsed, is not an object, does not match its digest or lacks a column."""
        try:
            row = json.loads(Path(path).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise RunnerError(f"unit file {path} is not valid JSON ({err})") from None
        if not isinstance(row, dict):
            raise RunnerError(f"unit file {path} holds a JSON {type(row).__name__}, not a row")
        stored = row.pop(ROW_DIGEST, None)
        if stored != row_digest(row):
            why = "has no row digest" if stored is None else "does not match its row digest (edited or damaged)"
            raise RunnerError(f"unit file {path} {why}")
        missing = [column for column in self.columns if column not in row]
        if missing:
            raise RunnerError(f"unit file {path} lacks the columns {', '.join(missing)}")
        return row

    def finished(self, key: UnitKey, expected_fingerprint: str) -> dict[str, Any] | None:
        """The stored row of `key` if its file is valid (`read`) and matches `expected_fingerprint`,
        else None; an invalid file is named in a warning (and the unit is then recomputed)."""
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            row = self.read(path)
        except RunnerError as err:
            log.warning("%s; recomputing that unit", err)
            return None
        return row if row.get("fingerprint") == expected_fingerprint else None

    def write(self, key: UnitKey, row: Mapping[str, Any]) -> Path:
        """`row` (and its `row_digest`) as the unit file of `key`, atomically."""
        body = json.loads(json.dumps(dict(row), default=str))  # the row exactly as it reads back
        body[ROW_DIGEST] = row_digest(body)
        return write_text_atomic(self.path(key), json.dumps(body, indent=1, sort_keys=True) + "\n")
