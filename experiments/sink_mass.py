"""Sink mass of OAttention on the frozen hosts, per block and head -> results/sink_mass.csv
(`configs/sink_mass.yaml`, `make sink-mass`).

    python experiments/sink_mass.py                                   # configs/sink_mass.yaml
    python experiments/sink_mass.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real
"""

import logging
from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING, OmegaConf

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.runner import HostConfig


@dataclass
class SinkMassConfig:
    """The schema of `configs/sink_mass.yaml` (each key's role is written there); `tau` is a
    variant's tau rule or a bare number, its calibrated `c` (`retrofit.variants.tau_rule`)."""

    host: HostConfig | None = None
    benchmark_datasets: str = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    n_estimators: int = MISSING
    test_size: float = MISSING
    tau: Any = MISSING
    eps_den: float | None = MISSING
    device: str = MISSING
    output: str = MISSING


SCHEMA = SinkMassConfig
AS_OBJECT = False


def run(job: JobStart) -> None:
    """Measure the sink mass of every host of `job` (the shipped ones, or `host`); write and print it."""
    from retrofit.audit.sink import sink_mass_table
    from retrofit.hosts import SHIPPED_HOSTS, get_path
    from retrofit.runner.sweep_config import dataset_specs, host_path
    from retrofit.variants import tau_rule

    cfg, base_dir = job.settings, job.base_dir
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    (output,) = job.outputs(cfg.output)
    if cfg.host is None:
        hosts = {name: get_path(name) for name in SHIPPED_HOSTS}
    else:
        hosts = {cfg.host.name: host_path(cfg, base_dir)}
    tau = tau_rule(OmegaConf.to_container(cfg.tau) if OmegaConf.is_config(cfg.tau) else cfg.tau)
    table = sink_mass_table(
        hosts,
        dataset_specs(job.hydra_cfg, cfg.datasets),
        list(cfg.seeds),
        base_dir=base_dir,
        n_estimators=cfg.n_estimators,
        test_size=cfg.test_size,
        tau=tau,
        eps_den=cfg.eps_den,
        device=job.device,
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(
        table.groupby(["host", "block", "head"])[["sink_share_mean", "frac_queries_sink_dominated", "max_logit_min"]]
        .agg({"sink_share_mean": "mean", "frac_queries_sink_dominated": "max", "max_logit_min": "min"})
        .to_string(float_format="%.3g")
    )
    print(f"wrote {output}")


if __name__ == "__main__":
    launch("sink_mass")
