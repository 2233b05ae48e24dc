"""The sweep: run cases (one fit, every variant), store one result file per unit under its identity.

The package has six modules; each imports only modules below it in this list (`identity` and
`store` import neither each other nor anything above them), and this one none of them:

- `sweep_config`: a Hydra config made into cases (with the decomposition arms), a whole sweep
  checked before it runs and finished after its last job with the cases it checked;
- `finish`: a run's end: its cases' units read back from the store by their identities and handed
  to `retrofit.results` (no torch, tabpfn or fitting);
- `case`: one host × dataset × seed fitted once, every unit predicted, timed and stored;
- `identity`: a unit's identity, the digest of everything its numbers are computed from (the
  data's and the host file's bytes, the settings, the library versions, the code);
- `store`: the unit files, named by identity, written atomically and read back verified (no
  torch, tabpfn or fitting);
- this one, read without torch, tabpfn or pandas (a job's schema is imported at launch): the
  schemas of the sweep's root config (`RunConfig`, `SweepConfig`, `HostConfig`, `TimingConfig`,
  `DecompositionConfig`), `job_config` (a composed root config checked against its schema),
  `command_overrides` (the command line as written), the
  keys that say where a run reads and writes (`resolve`, `output_dir`, `results_dir_of`,
  `runs_dir`, `reference_of`), and what a run shows on the console (`unit_bar`, `reused`,
  `collected_notices`, `say`, `report`, `job_logs`).

The record's readers (`retrofit.results`, pandas) are imported by the functions that read it.
Per-unit detail (retrofit reports, RMSEs) goes to each job's log file; the console handler of the
sweep's configs shows `log_level` and above (WARNING by default; `-v` or `log_level=INFO` shows
the detail too). Each job's bar (`unit_bar`, drawn by `retrofit.runner.case.run_case`) counts its
units, reused ones first; the launcher itself reports the jobs.
"""

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.types import RunMode
from omegaconf import MISSING, DictConfig, OmegaConf
from tqdm.auto import tqdm

from retrofit.errors import RunnerError
from retrofit.record_guard import check_record_outputs, in_record, writable_dir
from retrofit.typed import typed

if TYPE_CHECKING:  # pandas only where the record is read
    from retrofit.results.reproduction import Reference

log = logging.getLogger(__name__)

BUILTIN_SEARCHPATH = "pkg://retrofit.configs"
"""The search path entry under which Hydra finds the built-in variants."""


@dataclass
class DecompositionConfig:
    """The schema of `decomposition/*.yaml` (in `retrofit/configs/`): `variants` to split, `arms` (name ->
    retrofit hyper-parameter overrides; `{}` is the variant's own settings), and `seeds`: the cases
    whose seed is in the list run the extra arm units (null: every case)."""

    variants: list[str] = MISSING
    arms: dict[str, Any] = MISSING
    seeds: list[int] | None = None


@dataclass
class HostConfig:
    """The schema of `configs/host/*.yaml`: `name` labels results, `path` (null: the shipped host
    `name`) is a TabPFN checkpoint file."""

    name: str = MISSING
    path: str | None = MISSING


@dataclass
class TimingConfig:
    """Interleaved predict timing (`retrofit.runner.case`): `rounds` full forwards per timed unit on
    a regressor of the case's split with `members` ensemble members, on the cases whose seed is in
    `seeds` (null: every case)."""

    rounds: int = 3
    members: int = 1
    seeds: list[int] | None = None


class LogLevel(StrEnum):
    """The console's levels (`log_level`): a name logging knows, checked when the config is composed,
    before Hydra configures logging with it."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


@dataclass
class RunConfig:
    """The keys `configs/sweep.yaml` and `configs/tau_sweep.yaml` share: where units and results go
    (`configs/paths/`), the host, and the settings every case of the run shares
    (`retrofit.runner.sweep_config.run_settings`). Values live in the YAML files; the schema gives
    their types, so a misspelt or mistyped key fails when the config is composed."""

    results_dir: str | None = MISSING
    cache_dir: str | None = MISSING
    host: HostConfig = MISSING
    overwrite: bool = MISSING
    n_estimators: int = MISSING
    test_size: float = MISSING
    device: str = MISSING
    precision: str = MISSING
    threads: int = MISSING
    timing: TimingConfig = field(default_factory=TimingConfig)
    log_level: LogLevel = LogLevel.WARNING


@dataclass
class SweepConfig(RunConfig):
    """The schema of `configs/sweep.yaml` (each key's role is written there). `dataset` is checked
    by `retrofit.data.DatasetSpec` (its keys depend on its source), `variant` by
    `retrofit.variants.VariantConfig` (a search-path variant is refused naming its file), `hparams` by
    `retrofit.variants.resolve_variant`; `decomposition` and `benchmark_datasets` come with
    `+experiment=paper_table` or `+decomposition=<name>`, the `suite_*` lists with `+experiment=suite`."""

    dataset: dict[str, Any] = MISSING
    variant: Any = None
    seed: int = MISSING
    hparams: dict[str, Any] = field(default_factory=dict)
    reference: str | None = None
    reference_commit: str | None = None
    grid_changed: bool = False
    decomposition: DecompositionConfig | None = None
    benchmark_datasets: str | None = None
    suite_development: str | None = None
    suite_held_out: str | None = None
    suite_datasets: str | None = None
    suite_seeds: str | None = None


def job_config(cfg: DictConfig, schema: type, where: str) -> DictConfig:
    """A composed root config (its `hydra` node left out) checked against its `schema` once more:
    Hydra composes `+key=value` onto the schema unchecked, and this refuses such a key, naming it,
    before any work (RunnerError)."""
    job = {key: value for key, value in OmegaConf.to_container(cfg).items() if key != "hydra"}
    return typed(schema, job, where, RunnerError)


def command_overrides(hydra_cfg: DictConfig, kind: str = "task") -> list[str]:
    """The command line's overrides of `kind` ("task" or "hydra", `hydra.overrides.<kind>`) as
    written: a `${...}` in one is its text, never resolved (resolving `results_dir=${hydra:...}`
    would read a value that exists only inside a running job)."""
    return OmegaConf.to_container(hydra_cfg.overrides[kind], resolve=False)


def resolve(base_dir: Path, path: str | Path) -> Path:
    """`path` made absolute against `base_dir` (where the command was started)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else Path(base_dir) / path


def output_dir(cfg: DictConfig, base_dir: Path, key: str) -> Path:
    """The directory config key `key` names, resolved (`resolve`) and checked writable
    (`retrofit.record_guard.writable_dir`) before any work."""
    value = cfg[key]  # read by key: a value that does not resolve is named by it
    return writable_dir(value and resolve(base_dir, value), key)


def runs_dir(cfg: DictConfig, base_dir: Path) -> Path:
    """The unit store under `cache_dir` (`retrofit.runner.store`)."""
    return resolve(base_dir, cfg.cache_dir) / "runs"


def reference_of(cfg: DictConfig, base_dir: Path) -> "Reference | None":
    """The reproduction reference `cfg` names (`reference`, read at commit `reference_commit` or,
    null, from the working tree; `retrofit.results.reproduction.read_reference`), or None. A run that
    writes the committed record must reproduce every reference row (`Reference.require_all`),
    unless `grid_changed=true` says the grid changed on purpose (`Reference.grid_changed`)."""
    if not cfg.reference:
        for key in ("reference_commit", "grid_changed"):
            if cfg.get(key) not in (None, False):
                raise RunnerError(f"{key}={cfg.get(key)} needs reference=<a retrofit_rmse.csv>")
        return None
    from retrofit.results.reproduction import read_reference

    path, commit, grid_changed = resolve(base_dir, cfg.reference), cfg.get("reference_commit"), cfg.get("grid_changed")
    record = bool(cfg.results_dir) and in_record(resolve(base_dir, cfg.results_dir))
    return read_reference(path, commit, require_all=record, grid_changed=bool(grid_changed))


def results_dir_of(cfg: DictConfig, hydra_cfg: DictConfig) -> Path:
    """The `results_dir` this run may write: a writable directory (`writable_dir`) where none of the
    files a run writes (`FILES`) is a directory or other non-file, nor its lock a link, and the
    committed record only from its make target (`retrofit.record_guard.check_record_outputs`) in
    a whole sweep (`-m`) checked against a reference (`make retrofit`). RunnerError otherwise."""
    from retrofit.io import check_lock_path
    from retrofit.results.run_files import CSV, FILES, LOCK

    path = writable_dir(cfg.results_dir and resolve(Path(hydra_cfg.runtime.cwd), cfg.results_dir), "results_dir")
    check_lock_path(path / LOCK, str(path / CSV))
    blocked = [name for name in FILES if (path / name).exists() and not (path / name).is_file()]
    if blocked:
        raise RunnerError(
            f"{path / blocked[0]} is not a file, and this run writes one there; remove it or choose another results_dir"
        )
    if in_record(path):
        check_record_outputs([path])
        if hydra_cfg.mode != RunMode.MULTIRUN:
            raise RunnerError("the committed results/ is rewritten only by a whole sweep (-m): run make retrofit")
        if not cfg.reference:
            raise RunnerError("the committed results/ is rewritten only when checked: pass reference=<csv>")
    return path


# --- the console ------------------------------------------------------------------------------


def unit_bar(label: str, total: int, reused: int) -> tqdm:
    """A bar over the `total` units of the case `label`, `reused` of them already done."""
    return tqdm(total=total, initial=reused, unit="unit", desc=label, dynamic_ncols=True, leave=False)


def reused(count: int, total: int) -> str:
    """The line saying how many of a run's units came from the store."""
    return f"{count} of {total} units reused (same identity), {total - count} computed"


class Notices(logging.Handler):
    """Collects the runner's INFO notices while cases are built (e.g. closed variants not run on a
    host), so each distinct one is said once instead of once per job."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message not in self.messages:
            self.messages.append(message)


NOTICE_LOGGERS = ("retrofit.runner.sweep_config", "retrofit.data")
"""The loggers whose INFO messages are notices about the whole run (variants not run on a host, rows
dropped from a table), said once however many jobs repeat them."""


@contextmanager
def collected_notices() -> Iterator[list[str]]:
    """The block's distinct notices (`NOTICE_LOGGERS`), kept off the console while it runs (and
    logged once at INFO on this module's logger, i.e. into the run's log file, at the end)."""
    notices = Notices()
    loggers = [logging.getLogger(name) for name in NOTICE_LOGGERS]
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(notices)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield notices.messages
    finally:
        for logger, (level, propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(notices)
            logger.setLevel(level)
            logger.propagate = propagate
        for message in notices.messages:
            log.info(message)


def say(text: str = "") -> None:
    """Print `text` to the console without breaking a progress bar."""
    tqdm.write(text)


def print_run_summary(
    headline: str, written: Sequence[Path], log_files: str, notices: Sequence[str], reused: str
) -> None:
    """The end of a run: the notices (once), the headline table, the files written, where the
    per-unit detail is (`log_files`, the real paths) and how many units were reused (`reused`)."""
    for notice in notices:
        say(f"note: {notice}")
    say(f"\n{headline}\n\nwrote:")
    for path in written:
        say(f"  {path}")
    say(f"per-unit detail: {log_files}; {reused}")


def job_logs(sweep_dir: Path, job_name: str) -> str:
    """The log files of a multirun's jobs under `sweep_dir` (`<job>/<job_name>.log`), as paths."""
    logs = sorted(Path(sweep_dir).glob(f"*/{job_name}.log"), key=lambda path: (len(str(path)), str(path)))
    if len(logs) <= 2:
        return ", ".join(map(str, logs)) or f"no job log under {sweep_dir}"
    return f"{len(logs)} job logs, {logs[0]} ... {logs[-1]}"
