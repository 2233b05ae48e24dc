"""O-closure audit of the retrofitted hosts -> results/audit.csv (`make audit`)."""

import logging
import tempfile
from pathlib import Path

import hydra
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf

from retrofit.audit import Insertion, audit_table
from retrofit.hosts import get_path
from retrofit.hosts.random_host import random_host


@hydra.main(version_base="1.3", config_path="../configs", config_name="audit")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        hosts = {name: get_path(name) for name in cfg.hosts}
        for entry in cfg.random_hosts:
            hosts[f"random_{entry.arch}_seed{entry.seed}"] = random_host(entry.arch, Path(folder), entry.seed)
        table = audit_table(
            hosts,
            OmegaConf.to_container(cfg.variants),
            list(cfg.n_null),
            n_estimators=cfg.n_estimators,
            random_state=cfg.random_state,
            seed=cfg.seed,
            insertions=tuple(Insertion(**entry) for entry in cfg.insertions),
        )
    output = Path(to_absolute_path(cfg.output))
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
