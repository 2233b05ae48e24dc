"""Sink mass of OAttention on the frozen hosts, per block and head -> results/sink_mass.csv.

python experiments/sink_mass.py                                   # configs/sink_mass.yaml
python experiments/sink_mass.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import register, sink_mass

register("sink_mass")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="sink_mass")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        sink_mass.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
