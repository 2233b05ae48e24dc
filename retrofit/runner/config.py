"""From a composed Hydra config (`configs/config.yaml`) to a `Case`.

Variant selection: the `variant` config group defaults to none, meaning every variant in
`configs/variant/` (and any `hydra.searchpath` addition); `variant=<name>` restricts a run to
`baseline` plus that variant. Relative paths are resolved against the directory the command
started in (`hydra.runtime.cwd`), whatever `hydra.job.chdir` says.
"""

from collections.abc import Sequence
from pathlib import Path

from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from retrofit.data import DatasetSpec
from retrofit.hosts import check_checkpoint, get_path
from retrofit.runner.case import BASELINE, Case, UnitSpec
from retrofit.errors import RunnerError
from retrofit.variants import resolve_variant


def resolve(base_dir: Path, path: str | Path) -> Path:
    """`path` made absolute against `base_dir` (where the command was started)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else Path(base_dir) / path


def variant_names(choice: str | None, options: Sequence[str]) -> tuple[str, ...]:
    """All `options` (baseline first) when `choice` is None, else baseline plus `choice`."""
    if choice is not None and choice not in options:
        raise RunnerError(f"unknown variant {choice!r}; available: {sorted(options)}")
    names = sorted(options) if choice is None else [choice]
    return tuple(dict.fromkeys([BASELINE, *names]))


def unit_specs(names: Sequence[str], hparams: dict) -> tuple[UnitSpec, ...]:
    """One `UnitSpec` per variant name, each checked by `retrofit.variants.resolve_variant`."""
    for name in names:
        try:
            resolve_variant(name, **hparams)
        except ValueError as err:
            raise RunnerError(f"variant {name!r} with hparams {hparams}: {err}") from None
    return tuple(UnitSpec(name, hparams) for name in names)


def host_path(cfg: DictConfig, base_dir: Path) -> Path:
    """The host's checkpoint file: `host.path` when given (validated offline: exists, is a TabPFN
    checkpoint of a supported architecture), else the shipped host `host.name`."""
    if OmegaConf.is_missing(cfg.host, "path"):
        raise RunnerError("host=checkpoint needs host.path=<file of a TabPFN checkpoint>")
    if cfg.host.path is None:
        return get_path(cfg.host.name)
    return check_checkpoint(resolve(base_dir, cfg.host.path))


def run_settings(cfg: DictConfig, base_dir: Path) -> dict:
    """The `Case` fields every case of a config shares (host, start directory, regressor and
    split settings, `overwrite`), read from `cfg` (`configs/config.yaml` or `tau_sweep.yaml`)."""
    return dict(
        host=str(cfg.host.name),
        host_path=host_path(cfg, base_dir),
        base_dir=Path(base_dir),
        n_estimators=int(cfg.n_estimators),
        test_size=float(cfg.test_size),
        overwrite=bool(cfg.overwrite),
    )


def dataset_spec(node: DictConfig) -> DatasetSpec:
    """The validated `DatasetSpec` of a dataset config node."""
    return DatasetSpec.from_mapping(OmegaConf.to_container(node, resolve=True))


def case_from_config(cfg: DictConfig, *, variant_choice: str | None, variant_options: Sequence[str], base_dir: Path) -> Case:
    """The `Case` a composed config describes; raise RunnerError/DatasetError for bad values."""
    hparams = OmegaConf.to_container(cfg.hparams, resolve=True) if cfg.get("hparams") else {}
    return Case(
        dataset=dataset_spec(cfg.dataset),
        seed=int(cfg.seed),
        units=unit_specs(variant_names(variant_choice, variant_options), hparams),
        results_dir=resolve(base_dir, cfg.results_dir),
        **run_settings(cfg, base_dir),
    )


def case_from_hydra(cfg: DictConfig, hydra_cfg: DictConfig) -> Case:
    """`case_from_config` with the variant choice, its options and the start directory read off
    `hydra_cfg` (the `hydra` node: `HydraConfig.get()` in a job, `cfg.hydra` from compose)."""
    options = GlobalHydra.instance().config_loader().get_group_options(
        "variant", config_name=hydra_cfg.job.config_name, overrides=list(hydra_cfg.overrides.task)
    )
    return case_from_config(
        cfg,
        variant_choice=hydra_cfg.runtime.choices.get("variant"),
        variant_options=options,
        base_dir=Path(hydra_cfg.runtime.cwd),
    )
