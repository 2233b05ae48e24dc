"""OAttention exactness vs the float64 reference -> results/exactness.csv (`make exactness`)."""

from pathlib import Path

import hydra
from hydra.utils import to_absolute_path
from omegaconf import DictConfig

from retrofit.measure.exactness import Shape, exactness_table


@hydra.main(version_base="1.3", config_path="../configs", config_name="exactness")
def main(cfg: DictConfig) -> None:
    table = exactness_table(
        shapes=[Shape(**shape) for shape in cfg.shapes],
        score_stds=cfg.score_stds,
        dtypes=cfg.dtypes,
        null_fraction=cfg.null_fraction,
        insert_fraction=cfg.insert_fraction,
        seed=cfg.seed,
    )
    path = Path(to_absolute_path(cfg.output_csv))
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3g"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
