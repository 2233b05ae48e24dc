"""The noise floor: real movements on a real host, the per-source table and `read_floors`."""

from pathlib import Path

import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf, open_dict
from tabpfn.checkpoint import Checkpoint, save_as_safetensors

from benchmarks import noise_floor
from benchmarks.jobs.noise_floor import NoiseFloorConfig, host_paths
from benchmarks.noise_floor import measure, summarise, threads
from retrofit.errors import RetrofitError
from retrofit.fitting import fit_host, load_split
from retrofit.hosts import available, get_path, inference_config
from retrofit.measure.floor_table import COLUMNS, read_floors


def _floors(dataset_spec, tmp_path, hosts: dict[str, Path]) -> dict[str, float]:
    """`read_floors` of the input_ulp table of `hosts` on diabetes seed 0, one member."""
    movements = measure(hosts, [dataset_spec("diabetes")], [0], 1, base_dir=Path("."), sources=["input_ulp"])
    path = tmp_path / "noise_floor.csv"
    summarise(movements).to_csv(path, index=False)
    return read_floors(path)


@pytest.mark.slow
def test_last_bit_input_changes_hardly_move_tiny_v3_and_a_1e2_change_moves_it_far_more(
    dataset_spec, tmp_path, monkeypatch
):
    tiny_v3 = {"tiny_v3": get_path("tiny_v3")}
    ulp = _floors(dataset_spec, tmp_path, tiny_v3)["tiny_v3"]
    assert ulp < 1e-4  # % of the RMSE: under 1e-6 relative, the stability bar
    monkeypatch.setattr(noise_floor, "ULP_REL", 1e-2)  # a change that does matter
    coarse = _floors(dataset_spec, tmp_path, tiny_v3)["tiny_v3"]
    assert coarse > 1e-2 and coarse > 1e3 * max(ulp, 1e-7)


@pytest.mark.slow
def test_a_checkpoint_reading_tabpfns_row_fingerprint_has_a_floor_far_above_a_stable_hosts(dataset_spec, tmp_path):
    """A user's checkpoint gets the same report: tiny_v3_5 stored with the fingerprint on (tabpfn's
    v2.5 defaults) moves far more under last-bit changes than as shipped."""
    checkpoint = Checkpoint(get_path("tiny_v3_5")).load()
    checkpoint["inference_config"] = inference_config("v2_5_default")
    fingerprinted = tmp_path / "fingerprinted-v3.5.safetensors"  # "v3.5" in the name: tabpfn reads the version off it
    save_as_safetensors(checkpoint, fingerprinted)
    floors = _floors(dataset_spec, tmp_path, {"shipped": get_path("tiny_v3_5"), "fingerprinted": fingerprinted})
    assert floors["shipped"] < 1e-4 and floors["fingerprinted"] > 100 * max(floors["shipped"], 1e-6), floors


@pytest.mark.slow
def test_every_source_gives_its_movements_and_the_thread_count_is_restored(dataset_spec):
    _, data = load_split(dataset_spec("diabetes"), 0, base_dir=Path("."))
    rows = noise_floor.case_movements(get_path("tiny_v2"), data, 0, 1)
    assert [r["source"] for r in rows] == ["input_ulp", "input_ulp", "threads", "chunked"]
    assert all(0 <= r["rel_pct"] < 1e-3 for r in rows), rows
    before = torch.get_num_threads()
    fitted = fit_host(get_path("tiny_v2"), data, random_state=0, n_estimators=1)[0]
    threads(None, data, 1.0, fitted)
    assert torch.get_num_threads() == before


def test_the_table_has_one_row_per_host_and_source_and_read_floors_takes_each_hosts_largest(tmp_path):
    movements = pd.DataFrame(
        [
            dict(host=h, host_digest=f"{h}-digest", dataset="d", seed=s, source=src, rel_pct=pct)
            for h, src, s, pct in [
                ("a", "input_ulp", 0, 1e-6),
                ("a", "input_ulp", 1, 3e-6),
                ("a", "threads", 0, 2e-5),
                ("b", "input_ulp", 0, 0.25),
                ("b", "chunked", 0, 0.0),
            ]
        ]
    )
    table = summarise(movements)
    assert list(table.columns) == COLUMNS
    first = table.iloc[0].to_dict()
    assert first == dict(
        host="a", host_digest="a-digest", source="input_ulp", cases=2, median_rel_pct=2e-6, max_rel_pct=3e-6
    )
    path = tmp_path / "floors.csv"
    table.to_csv(path, index=False, float_format="%.3g")
    assert read_floors(path) == {"a": 2e-5, "b": 0.25}


def test_read_floors_refuses_a_table_without_its_columns(tmp_path):
    path = tmp_path / "other.csv"
    pd.DataFrame({"host": ["a"], "rmse": [1.0]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="max_rel_pct"):
        read_floors(path)


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


def test_the_committed_floors_cover_every_shipped_host_and_each_is_float32_noise():
    floors = read_floors(Path(__file__).resolve().parents[1] / "results" / "noise_floor.csv")
    assert set(floors) == set(available())
    assert all(0 < floor < 1e-3 for floor in floors.values()), floors  # % of the RMSE: under 1e-5 relative
