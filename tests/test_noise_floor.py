"""The noise floor experiment (`experiments/noise_floor.py`): the hosts and datasets it measures,
and the committed floors."""

from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf, open_dict
from test_floor_movements import FLOAT32_SOURCES

from experiments.noise_floor import NoiseFloorConfig, chosen_datasets, host_paths
from retrofit.errors import RetrofitError
from retrofit.hosts import available, get_path
from retrofit.measure.floor_table import read_floors


def test_the_shipped_hosts_by_default_or_the_one_chosen_host(hydra_compose, tmp_path):
    def settings(*overrides: str) -> NoiseFloorConfig:
        cfg = hydra_compose("noise_floor", overrides)
        with open_dict(cfg):
            del cfg["hydra"]
        return OmegaConf.to_object(cfg)

    shipped = host_paths(settings(), tmp_path)
    assert shipped == {name: get_path(name) for name in available()}
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "x.safetensors").symlink_to(get_path("tiny_v3"))
    mine = settings("host=checkpoint", "host.path=models/x.safetensors", "host.name=mine")
    assert host_paths(mine, tmp_path) == {"mine": tmp_path / "models" / "x.safetensors"}  # checked, its own name kept
    with pytest.raises(RetrofitError, match=r"missing\.ckpt"):
        host_paths(settings("host=checkpoint", "host.path=models/missing.ckpt", "host.name=mine"), tmp_path)
    assert host_paths(settings("host=tiny_v2"), tmp_path) == {"tiny_v2": get_path("tiny_v2")}


def test_the_committed_floors_cover_every_shipped_host_and_each_float32_source_is_float32_noise():
    path = Path(__file__).resolve().parents[1] / "results" / "noise_floor.csv"
    assert {host for host, device in read_floors(path)} == set(available())
    table = pd.read_csv(path)
    float32 = table[table["source"].isin(FLOAT32_SOURCES)]
    assert float32.groupby("host")["max_rel_pct"].max().between(0, 1e-3, inclusive="right").all()  # under 1e-5 relative


def test_one_chosen_dataset_instead_of_the_list_and_not_both(hydra_compose, tmp_path):
    def chosen(*overrides: str):
        cfg = hydra_compose("noise_floor", overrides)
        hydra_cfg = cfg.hydra
        with open_dict(cfg):
            del cfg["hydra"]
        return chosen_datasets(OmegaConf.to_object(cfg), hydra_cfg)

    assert [spec.name for spec in chosen("dataset=wage")] == ["wage"]
    assert [spec.name for spec in chosen("datasets=[wage,hitters]")] == ["wage", "hitters"]
    (tmp_path / "houses.csv").write_text("a,b,price\n1,2,3\n4,5,6\n")
    own = chosen("dataset=csv", f"dataset.path={tmp_path / 'houses.csv'}", "dataset.target=price")
    assert [(spec.name, spec.target) for spec in own] == [("houses", "price")]
    with pytest.raises(RetrofitError, match="not both"):
        chosen("dataset=wage", "datasets=[hitters]")
