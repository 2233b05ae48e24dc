"""Host quality bar -> `<results_dir>/host_quality.csv` (per case), `host_quality_summary.csv`,
`host_extrapolation.csv` (`retrofit.measure.host_quality.extrapolation_probe`) and a printed summary; with
`--config-name preset_selection`, the same on the preset-selection datasets (no model cards).
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import host_quality, register

register("host_quality")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="host_quality")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        host_quality.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
