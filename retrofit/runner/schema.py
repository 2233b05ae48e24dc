"""The sweep's root config read without torch, tabpfn or pandas: its schemas (`RunConfig`,
`SweepConfig`), `job_config` (a composed root config checked against its schema), and the keys
that say where a run reads and writes (`resolve`, `output_dir`, `results_dir_of`, `runs_dir`,
`reference_of`). The record's readers (`retrofit.results`, pandas) are imported by the functions
that read it, so a job's schema is imported in a fraction of a second.
"""

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.types import RunMode
from omegaconf import MISSING, DictConfig, OmegaConf

from retrofit.errors import RunnerError
from retrofit.record_guard import check_record_outputs, in_record, writable_dir
from retrofit.typed import typed

if TYPE_CHECKING:  # pandas only where the record is read
    from retrofit.results.compare import Reference


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
    (`configs/paths/`), the host, and the settings every case of the run shares (`retrofit.runner.config.run_settings`).
    Values live in the YAML files; the schema gives their types, so a misspelt or mistyped key fails
    when the config is composed."""

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
    `+experiment=paper_table` or `+decomposition=<name>`."""

    dataset: dict[str, Any] = MISSING
    variant: Any = None
    seed: int = MISSING
    hparams: dict[str, Any] = field(default_factory=dict)
    reference: str | None = None
    reference_commit: str | None = None
    grid_changed: bool = False
    decomposition: DecompositionConfig | None = None
    benchmark_datasets: str | None = None


def job_config(cfg: DictConfig, schema: type, where: str) -> DictConfig:
    """A composed root config (its `hydra` node left out) checked against its `schema` once more:
    Hydra composes `+key=value` onto the schema unchecked, and this refuses such a key, naming it,
    before any work (RunnerError)."""
    job = {key: value for key, value in OmegaConf.to_container(cfg).items() if key != "hydra"}
    return typed(schema, job, where, RunnerError)


def resolve(base_dir: Path, path: str | Path) -> Path:
    """`path` made absolute against `base_dir` (where the command was started)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else Path(base_dir) / path


def output_dir(cfg: DictConfig, base_dir: Path, key: str) -> Path:
    """The directory config key `key` names, resolved (`resolve`) and checked writable
    (`retrofit.record_guard.writable_dir`) before any work."""
    value = cfg.get(key)
    return writable_dir(value and resolve(base_dir, value), key)


def runs_dir(cfg: DictConfig, base_dir: Path) -> Path:
    """The unit store under `cache_dir` (`retrofit.runner.store`)."""
    return resolve(base_dir, cfg.cache_dir) / "runs"


def reference_of(cfg: DictConfig, base_dir: Path) -> "Reference | None":
    """The reproduction reference `cfg` names (`reference`, read at commit `reference_commit` or,
    null, from the working tree; `retrofit.results.compare.read_reference`), or None. A run that
    writes the committed record must reproduce every reference row (`Reference.require_all`),
    unless `grid_changed=true` says the grid changed on purpose (`Reference.grid_changed`)."""
    if not cfg.reference:
        for key in ("reference_commit", "grid_changed"):
            if cfg.get(key) not in (None, False):
                raise RunnerError(f"{key}={cfg.get(key)} needs reference=<a retrofit_rmse.csv>")
        return None
    from retrofit.results.compare import read_reference

    path, commit, grid_changed = resolve(base_dir, cfg.reference), cfg.get("reference_commit"), cfg.get("grid_changed")
    record = bool(cfg.results_dir) and in_record(resolve(base_dir, cfg.results_dir))
    return read_reference(path, commit, require_all=record, grid_changed=bool(grid_changed))


def results_dir_of(cfg: DictConfig, hydra_cfg: DictConfig) -> Path:
    """The `results_dir` this run may write: a writable directory (`writable_dir`) where none of the
    files a run writes (`FILES`) is a directory or other non-file, and the
    committed record only from its make target (`retrofit.record_guard.check_record_outputs`) in
    a whole sweep (`-m`) checked against a reference (`make retrofit`). RunnerError otherwise."""
    from retrofit.results.aggregate import FILES

    path = writable_dir(cfg.results_dir and resolve(Path(hydra_cfg.runtime.cwd), cfg.results_dir), "results_dir")
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
