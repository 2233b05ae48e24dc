"""Guards on where the runner writes, checked before the first case runs.

`RECORD_DIR` is the checkout's committed `results/`: the sweep's files there (`retrofit_rmse.csv`,
its table, plots, decomposition and `reproduction.txt`) are the record, rewritten only by `make
retrofit`, which passes `record=true` to a whole sweep (`-m`) checked against a reference.
Any other command aiming at it (a single run, `experiments/aggregate.py`, a sweep without
`record=true`) is refused with the place to write instead. Output and cache directories must be
(or be creatable as) writable directories, tried by creating and removing a file, not by
permission bits (which root ignores). The other experiments' files in `results/` are written only
by their own targets' default runs (`check_record_outputs`).
"""

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from retrofit.errors import RunnerError

RECORD_DIR = Path(__file__).resolve().parents[2] / "results"
"""The committed `results/` of the checkout holding this package."""
ELSEWHERE = "outputs/results"
"""Where the refusals suggest writing results instead (the `results_dir` default of `configs/config.yaml`)."""
EXAMPLES = {"results_dir": ELSEWHERE, "cache_dir": ".cache"}
"""An example value per output directory key, for the message refusing a null one."""


def writable_dir(path: Path | None, key: str) -> Path:
    """`path` if it is a writable directory or could be created as one; RunnerError naming `key`
    (a config key such as `results_dir`) when it is null, a file, under a file, or not writable.
    Creates nothing."""
    if path is None:
        raise RunnerError(f"{key} is null; give a directory, e.g. {key}={EXAMPLES.get(key, ELSEWHERE)}")
    path = Path(path)
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        where = "" if existing == path else f" ({existing} is a file)"
        raise RunnerError(f"{key}={path} is not a directory{where}; choose another {key}")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise RunnerError(f"{key}={path} is not writable ({err.strerror}: {existing}); choose another {key}") from None
    return path


def is_record(results_dir: Path, record_dir: Path = RECORD_DIR) -> bool:
    """Whether `results_dir` is the committed record directory."""
    return Path(results_dir).resolve() == Path(record_dir).resolve()


def outside_record(path: Path, key: str, record_dir: Path = RECORD_DIR) -> Path:
    """`path` unless it is the committed record directory or inside it; RunnerError naming `key`."""
    record = Path(record_dir).resolve()
    if Path(path).resolve() == record or record in Path(path).resolve().parents:
        raise RunnerError(f"{key}={path} is inside the committed {record}; choose another {key}, e.g. {key}=.cache")
    return path


def check_results_dir(
    results_dir: Path | None, *, record: bool, whole_sweep: bool, record_dir: Path = RECORD_DIR
) -> Path:
    """`results_dir`, writable (`writable_dir`), and the committed record only when `record` is set
    for a whole sweep (`whole_sweep`: `-m`) — `make retrofit`. RunnerError saying where to write
    otherwise, and for `record` aimed anywhere but the record or outside a sweep."""
    path = writable_dir(results_dir, "results_dir")
    if record and not is_record(path, record_dir):
        raise RunnerError(f"record=true rewrites the committed {record_dir}; results_dir={path} is not it")
    if record and not whole_sweep:
        raise RunnerError("record=true rewrites the committed results/ only from a whole sweep (-m): run make retrofit")
    if is_record(path, record_dir) and not record:
        raise RunnerError(
            f"results_dir={path} is the committed record, which only `make retrofit` rewrites; "
            f"write elsewhere, e.g. results_dir={ELSEWHERE}"
        )
    return path


INERT_KEYS = ("log_level", "plot_only")
"""Overrides that change what a run prints or redraws, not the numbers it writes."""


def check_record_outputs(paths: Iterable[Path | str], overrides: Sequence[str], record_dir: Path = RECORD_DIR) -> None:
    """Refuse an experiment run that would write into the committed `results/` from another config
    than its `make` target's. Each experiment target runs its entry point on the packaged config
    with no overrides, so a run with any override (other than `INERT_KEYS`) aiming at a file in
    `record_dir` would replace the record with a partial or different result: RunnerError naming
    the file, the overrides and where to write instead. Checked before any work."""
    changed = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in INERT_KEYS]
    record = Path(record_dir).resolve()
    inside = [Path(p) for p in paths if record in Path(p).resolve().parents]
    if changed and inside:
        raise RunnerError(
            f"{inside[0]} is the committed record, written only by its make target from the packaged config; "
            f"this run overrides {changed[:5]}: write it elsewhere (e.g. an output under outputs/) "
            "or drop the overrides"
        )
