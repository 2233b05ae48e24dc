"""Host quality bar -> `<results_dir>/host_quality.csv` (per case), `host_quality_summary.csv`,
`host_extrapolation.csv` (`retrofit.hosts.quality.extrapolation_probe`) and a printed summary; with
`--config-name preset_selection`, the same on the preset-selection datasets (no model cards)."""

import logging
from pathlib import Path

import hydra
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from retrofit.data import DatasetSpec, load_table, split
from retrofit.hosts import get_path
from retrofit.hosts.card import render_card
from retrofit.hosts.quality import extrapolation_probe, host_regressor, per_dataset_ratios, score_case, summarise

log = logging.getLogger(__name__)
CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


@hydra.main(version_base="1.3", config_path="../configs", config_name="host_quality")
def main(cfg: DictConfig) -> None:
    hosts = {name: get_path(name) for name in cfg.hosts}
    rows = []
    for name in cfg.datasets:
        spec = DatasetSpec.from_mapping(OmegaConf.load(CONFIG_DIR / "dataset" / f"{name}.yaml"))
        table = load_table(spec, Path.cwd())
        for seed in cfg.seeds:
            rows += score_case(
                name, seed, split(table, seed, max_rows=spec.max_rows), hosts, list(cfg.presets), cfg.n_estimators
            )
            log.info("%s seed %d done", name, seed)
    scores = pd.DataFrame(rows)
    out = Path(cfg.results_dir) / "host_quality.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    scores.to_csv(out, index=False, float_format="%.6g")
    summary = summarise(scores)
    summary.to_csv(out.with_name("host_quality_summary.csv"), index=False)
    print(summary.to_string(index=False))
    probes = pd.concat(
        [
            extrapolation_probe(host_regressor(path, cfg.presets[0], cfg.n_estimators, seed=0)).assign(
                model=f"{host}[{cfg.presets[0]}]"
            )
            for host, path in hosts.items()
        ]
    )
    probes.to_csv(out.with_name("host_extrapolation.csv"), index=False, float_format="%.4f")
    print(
        probes.pivot_table(index="x_z", columns="model", values="pred_y_z")
        .assign(true_y_z=probes.groupby("x_z")["true_y_z"].first())
        .round(2)
        .to_string()
    )
    if cfg.cards_dir:
        for host, path in hosts.items():
            card = render_card(host, path, per_dataset_ratios(scores, f"{host}[{cfg.presets[0]}]"), Path(cfg.cards_dir))
            log.info("model card %s", card)
    log.info("wrote %s", out)


if __name__ == "__main__":
    main()
