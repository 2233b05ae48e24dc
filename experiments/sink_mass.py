"""Sink mass of OAttention on the frozen hosts, per block and head -> results/sink_mass.csv.

python experiments/sink_mass.py                                   # configs/sink_mass.yaml
python experiments/sink_mass.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real
"""

import logging
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from retrofit.audit.sink import sink_mass_table
from retrofit.errors import exit_on_user_error
from retrofit.hosts import SHIPPED_HOSTS, get_path
from retrofit.runner.config import dataset_specs, host_path, resolve
from retrofit.runner.guard import check_record_outputs


@hydra.main(version_base="1.3", config_path="../configs", config_name="sink_mass")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    hydra_cfg = HydraConfig.get()
    base_dir = Path(hydra_cfg.runtime.cwd)
    output = resolve(base_dir, cfg.output)
    with exit_on_user_error():
        check_record_outputs([output], hydra_cfg.overrides.task)
        if cfg.get("host") is None:
            hosts = {name: get_path(name) for name in SHIPPED_HOSTS}
        else:
            hosts = {str(cfg.host.name): host_path(cfg, base_dir)}
        table = sink_mass_table(
            hosts,
            dataset_specs(hydra_cfg, cfg.datasets),
            list(cfg.seeds),
            base_dir=base_dir,
            n_estimators=int(cfg.n_estimators),
            test_size=float(cfg.test_size),
            tau=OmegaConf.to_container(cfg.tau) if cfg.tau is not None else None,
            eps_den=cfg.eps_den,
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
    main()
