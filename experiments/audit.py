"""O-closure audit of the retrofitted hosts -> results/audit.csv (`configs/audit.yaml`, `make audit`).

python experiments/audit.py                                          # configs/audit.yaml: its `hosts`
python experiments/audit.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real   # one checkpoint
python experiments/audit.py 'random_hosts=[{arch: tabpfn_v3_5, seed: 0}]'
"""

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf

from retrofit.errors import RunnerError
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.runner import HostConfig, command_overrides

SIZES = ("tiny", "default")
"""A random host's size: `tiny` (`retrofit.hosts.random_host.random_host`) or tabpfn's default
architecture config, stored as tabpfn publishes it (`default_size_host`)."""


@dataclass
class RandomHostConfig:
    """A random host to audit (`retrofit.hosts.random_host`): its architecture, seed and size (`SIZES`)."""

    arch: str = MISSING
    seed: int = MISSING
    size: str = "tiny"


@dataclass
class InsertionConfig:
    """Where nulls go and what they are (`retrofit.audit.Insertion`)."""

    at: str = MISSING
    kind: str = MISSING


@dataclass
class AuditConfig:
    """The schema of `configs/audit.yaml` (each key's role is written there). `variants`: label ->
    `retrofit.retrofit` arguments (`variant` and hyper-parameters), checked when each is applied."""

    host: HostConfig | None = None
    hosts: list[str] = MISSING
    random_hosts: list[RandomHostConfig] = MISSING
    variants: dict[str, dict[str, Any]] = MISSING
    insertions: list[InsertionConfig] = MISSING
    n_null: list[int] = MISSING
    dataset: str = MISSING
    n_estimators: int = MISSING
    random_state: int = MISSING
    seed: int = MISSING
    device: str = MISSING
    output: str = MISSING


SCHEMA = AuditConfig
AS_OBJECT = False


def audited_hosts(cfg: DictConfig, hydra_cfg: DictConfig, folder: Path) -> dict[str, Path]:
    """Label -> checkpoint of every host to audit: `host` (a shipped host or `host=checkpoint`) when
    set, else the shipped hosts of `hosts`; plus a random host per `random_hosts` entry (tiny, or at
    tabpfn's default size and published format), in `folder`."""
    from retrofit.hosts import check_checkpoint, get_path
    from retrofit.hosts.random_host import TINY_ARCHS, default_size_host, random_host
    from retrofit.runner.sweep_config import host_path

    if cfg.host is None:
        hosts = {name: get_path(name) for name in cfg.hosts}
    else:
        listed = [o for o in command_overrides(hydra_cfg) if o.split("=", 1)[0].lstrip("+~") == "hosts"]
        if listed:
            raise RunnerError(
                f"host={cfg.host.name} audits that one host, but {listed[0]!r} lists others too; pass either "
                "host=<name> (or host=checkpoint host.path=...) or hosts=[...], not both"
            )
        hosts = {cfg.host.name: host_path(cfg, Path(hydra_cfg.runtime.cwd))}
    for i, entry in enumerate(cfg.random_hosts):
        missing = [key for key in ("arch", "seed") if OmegaConf.is_missing(entry, key)]
        if missing or entry.arch not in TINY_ARCHS or entry.size not in SIZES:
            given = ", ".join(f"{key}: {value}" for key, value in OmegaConf.to_container(entry).items())
            raise RunnerError(
                f"random_hosts[{i}] {{{given}}} must be "
                f"{{arch: <one of {sorted(TINY_ARCHS)}>, seed: <int>, size: <one of {list(SIZES)}, default tiny>}}"
            )
        if entry.size == "tiny":
            hosts[f"random_{entry.arch}_seed{entry.seed}"] = random_host(entry.arch, folder, entry.seed)
        else:
            label = f"default_size_{entry.arch}_seed{entry.seed}"
            hosts[label] = check_checkpoint(default_size_host(entry.arch, folder / label, entry.seed))
    return hosts


def run(job: JobStart) -> None:
    """Audit every host of `job` under every variant and insertion; write the table and print the
    largest relative prediction change per host, variant and insertion."""
    from retrofit.audit import Insertion, audit_table
    from retrofit.audit.run import audit_summary
    from retrofit.runner.sweep_config import dataset_specs

    cfg, base_dir = job.settings, job.base_dir
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    (output,) = job.outputs(cfg.output)
    with tempfile.TemporaryDirectory() as folder:
        table = audit_table(
            audited_hosts(cfg, job.hydra_cfg, Path(folder)),
            OmegaConf.to_container(cfg.variants),
            list(cfg.n_null),
            dataset=dataset_specs(job.hydra_cfg, [cfg.dataset])[0],
            base_dir=base_dir,
            n_estimators=cfg.n_estimators,
            random_state=cfg.random_state,
            seed=cfg.seed,
            insertions=tuple(Insertion(entry.at, entry.kind) for entry in cfg.insertions),
            device=job.device,
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print("largest relative prediction change (linf_pred / max_abs_pred), over null counts:")
    print(audit_summary(table).to_string())
    print(f"wrote {output}")


if __name__ == "__main__":
    launch("audit")
