"""Host quality bar -> `<results_dir>/host_quality.csv` (per case), `host_quality_summary.csv`,
`host_extrapolation.csv` (`retrofit.measure.host_quality.extrapolation_probe`) and a printed summary; with
`--config-name preset_selection`, the same on the preset-selection datasets (no model cards)."""

import logging
from pathlib import Path

import hydra
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.fitting import load_split
from retrofit.hosts import get_path
from retrofit.hosts.card import render_card
from retrofit.measure.host_quality import extrapolation_probe, host_regressor, per_dataset_ratios, score_case, summarise
from retrofit.runner.config import dataset_specs
from retrofit.runner.guard import check_record_outputs

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path="../configs", config_name="host_quality")
def main(cfg: DictConfig) -> None:
    hosts = {name: get_path(name) for name in cfg.hosts}
    hydra_cfg = HydraConfig.get()
    out = Path(cfg.results_dir) / "host_quality.csv"
    with exit_on_user_error():
        check_record_outputs([out], hydra_cfg.overrides.task)
    rows = []
    for spec in dataset_specs(hydra_cfg, cfg.datasets):
        for seed in cfg.seeds:
            _, data = load_split(spec, seed, base_dir=Path(hydra_cfg.runtime.cwd))
            rows += score_case(spec.name, seed, data, hosts, list(cfg.presets), cfg.n_estimators)
            log.info("%s seed %d done", spec.name, seed)
    scores = pd.DataFrame(rows)
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
