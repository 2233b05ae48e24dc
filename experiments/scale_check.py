"""Every architecture at tabpfn's default size -> results/scale.csv (`make scale-check`)."""

import logging
import tempfile
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import to_absolute_path
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.measure.scale import ScaleConfig, goal_lines, goals_text, refused_lines, scale_table
from retrofit.runner.guard import check_record_outputs


@hydra.main(version_base="1.3", config_path="../configs", config_name="scale_check")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.INFO)
    with exit_on_user_error():
        config = ScaleConfig.from_config(cfg)
        output = Path(to_absolute_path(config.output))
        check_record_outputs([output], HydraConfig.get().overrides.task)
    with tempfile.TemporaryDirectory() as folder:
        table = scale_table(config, Path(folder))
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.drop(columns="reason").to_string(index=False, float_format="%.4g"))
    print(f"goals ({goals_text()}):")
    print("\n".join(goal_lines(table)))
    print("\n".join(refused_lines(table)))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
