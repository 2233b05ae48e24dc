"""Units of work and their result files (TabArena-style: one file per unit, its path says what ran).

A unit is one variant (with its hyper-parameter overrides) of one case (host × dataset × seed).
Its result lives at

    <runs_dir>/host=<host>/dataset=<dataset>/seed=<seed>/variant=<variant>[,<k>=<v>...].json

and holds one results row plus a `fingerprint` of everything the number depends on (host file
content, dataset spec, split and regressor settings, device and precision, the tabpfn and torch
versions and `code_digest()` of this package's source). A unit whose file exists with the same
fingerprint is finished and skipped; a stale one (different fingerprint) is recomputed.

The store is a local cache for resuming an interrupted sweep (`.cache/runs/` by default, ignored by
git), not the record: `make retrofit` recomputes every unit on a fresh clone and checks the
aggregate against the committed `results/retrofit_rmse.csv` (`retrofit.runner.reproduce`).
Writes are atomic (`retrofit.io`), so concurrent sweeps on one store and interrupted runs leave
whole files or none; `rows()` reads whatever is complete.
"""

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tabpfn
import torch

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic


@dataclass(frozen=True, order=True)
class UnitKey:
    """Identity of one unit of work; `hparams` is a sorted tuple of (name, value) overrides."""

    host: str
    dataset: str
    seed: int
    variant: str
    hparams: tuple[tuple[str, Any], ...] = ()

    def relpath(self) -> Path:
        """Where this unit's result file lives, relative to the runs directory."""
        variant = ",".join([f"variant={self.variant}", *(f"{k}={v}" for k, v in self.hparams)])
        return Path(f"host={self.host}", f"dataset={self.dataset}", f"seed={self.seed}", f"{variant}.json")


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


@functools.cache
def code_digest(root: Path = PACKAGE) -> str:
    """sha256 over every `*.py` file under `root` (relative path and content), first 16 hex digits:
    any change to the code that computes a number makes every stored unit stale."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def environment() -> dict[str, str]:
    """The library versions and code digest every fingerprint includes."""
    return {"tabpfn": tabpfn.__version__, "torch": torch.__version__, "code": code_digest()}


def file_digest(path: Path) -> str:
    """sha256 of a file's content (a host checkpoint), first 16 hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


class UnitStore:
    """Result files under `runs_dir`: read a finished unit, write one atomically."""

    def __init__(self, runs_dir: Path):
        self.runs_dir = Path(runs_dir)

    def path(self, key: UnitKey) -> Path:
        return self.runs_dir / key.relpath()

    def finished(self, key: UnitKey, expected_fingerprint: str) -> dict[str, Any] | None:
        """The stored row of `key` if it exists and matches `expected_fingerprint`, else None."""
        path = self.path(key)
        if not path.is_file():
            return None
        row = json.loads(path.read_text())
        return row if row.get("fingerprint") == expected_fingerprint else None

    def write(self, key: UnitKey, row: Mapping[str, Any]) -> Path:
        return write_text_atomic(self.path(key), json.dumps(dict(row), indent=1, sort_keys=True, default=str) + "\n")

    def rows(self) -> list[dict[str, Any]]:
        """Every stored row, in path order; raise RunnerError naming a corrupt file."""
        rows = []
        for path in sorted(self.runs_dir.rglob("*.json")):
            try:
                rows.append(json.loads(path.read_text()))
            except json.JSONDecodeError as err:
                raise RunnerError(
                    f"{path} is not valid JSON ({err}); delete it and rerun to recompute that unit"
                ) from None
        return rows
