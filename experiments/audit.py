"""O-closure audit of the retrofitted hosts -> results/audit.csv (`make audit`).

python experiments/audit.py                                          # configs/audit.yaml: its `hosts`
python experiments/audit.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real   # one checkpoint
python experiments/audit.py 'random_hosts=[{arch: tabpfn_v3_5, seed: 0}]'
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import audit, register

register("audit")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="audit")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        audit.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
