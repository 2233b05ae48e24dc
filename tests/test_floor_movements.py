"""The noise floor's measurement (`benchmarks.floor_movements`): real movements on a real host, the
per-source table and `read_floors`."""

from pathlib import Path

import pandas as pd
import pytest
import torch
from tabpfn.checkpoint import Checkpoint, save_as_safetensors

from benchmarks import floor_movements
from benchmarks.floor_movements import measure, summarise, threads
from retrofit.fitting import fit_host, load_split
from retrofit.hosts import column_embeddings, get_path, inference_config
from retrofit.measure.floor_table import COLUMNS, merged, read_floors


def _floors(dataset_spec, tmp_path, hosts: dict[str, Path]) -> dict[str, float]:
    """Host -> its CPU floor (`read_floors`) in the input_ulp table of `hosts` on diabetes seed 0, one member."""
    movements = measure(hosts, [dataset_spec("diabetes")], [0], 1, base_dir=Path("."), sources=["input_ulp"])
    path = tmp_path / "noise_floor.csv"
    summarise(movements).to_csv(path, index=False)
    return {host: floor for (host, device), floor in read_floors(path).items() if device == "cpu"}


@pytest.mark.slow
def test_last_bit_input_changes_hardly_move_tiny_v3_and_a_1e2_change_moves_it_far_more(
    dataset_spec, tmp_path, monkeypatch
):
    tiny_v3 = {"tiny_v3": get_path("tiny_v3")}
    ulp = _floors(dataset_spec, tmp_path, tiny_v3)["tiny_v3"]
    assert ulp < 1e-4  # % of the RMSE: under 1e-6 relative, the stability bar
    monkeypatch.setattr(floor_movements, "ULP_REL", 1e-2)  # a change that does matter
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


FLOAT32_SOURCES = ["input_ulp", "threads", "chunked"]
"""The sources that leave the host in float32 on one device: last-bit movements only."""


def _drawing_v2(tmp_path: Path) -> Path:
    """tiny_v2 without its stored column embeddings, as tabpfn publishes v2 weights: it draws them on
    its device at every forward."""
    checkpoint = Checkpoint(get_path("tiny_v2")).load()
    del checkpoint[column_embeddings.HEADER_FIELD]
    path = tmp_path / "drawing-v2-regressor.safetensors"
    save_as_safetensors(checkpoint, path)
    return path


@pytest.mark.slow
def test_every_source_gives_its_movements_and_the_host_is_restored(dataset_spec, tmp_path):
    _, data = load_split(dataset_spec("diabetes"), 0, base_dir=Path("."))
    drawing = _drawing_v2(tmp_path)
    rows = floor_movements.case_movements(drawing, data, 0, 1)
    on_device = ["device"] if torch.cuda.is_available() else []  # CPU vs CUDA: only where CUDA exists
    expected = ["input_ulp", "input_ulp", "threads", "chunked", "precision", *on_device, "draw", "draw", "draw"]
    assert [r["source"] for r in rows] == expected
    assert all(0 <= r["rel_pct"] < 1e-3 for r in rows if r["source"] in FLOAT32_SOURCES), rows
    draws = [r["rel_pct"] for r in rows if r["source"] == "draw"]
    assert min(draws) > 1e-3, draws  # another draw of its column embeddings moves it beyond float32 noise
    before = torch.get_num_threads()
    fitted = fit_host(drawing, data, random_state=0, n_estimators=1)[0]
    layers = [getattr(model, column_embeddings.LAYER) for model in fitted.models_]
    threads(None, data, 1.0, fitted)
    floor_movements.draw(None, data, 1.0, fitted)
    assert torch.get_num_threads() == before
    assert [getattr(model, column_embeddings.LAYER) for model in fitted.models_] == layers
    shipped = floor_movements.case_movements(get_path("tiny_v2"), data, 0, 1, sources=["draw"])
    assert shipped == []  # the shipped tiny_v2 carries its draws: nothing is drawn at inference


@pytest.mark.slow
def test_a_host_that_draws_nothing_has_no_draw_source_and_tabpfns_precision_is_its_own(dataset_spec):
    """tiny_v3 draws nothing at inference; precision="auto" runs it as tabpfn does by default (on
    this CPU: bfloat16 autocast where the CPU has native bf16, else float32, which moves nothing)."""
    from tabpfn.utils import infer_autocast_inference_mode

    _, data = load_split(dataset_spec("diabetes"), 0, base_dir=Path("."))
    rows = floor_movements.case_movements(get_path("tiny_v3"), data, 0, 1, sources=["precision", "draw"])
    (moved,) = [r["rel_pct"] for r in rows if r["source"] == "precision"]
    assert [r["source"] for r in rows] == ["precision"]
    autocast = infer_autocast_inference_mode([torch.device("cpu")], enable=None)
    assert (moved > 1e-3) if autocast else (moved == 0.0), moved


def test_the_table_has_one_row_per_host_and_source_and_read_floors_takes_each_hosts_largest(tmp_path):
    movements = pd.DataFrame(
        [
            dict(host=h, host_digest=f"{h}-digest", device="cpu", dataset="d", seed=s, source=src, rel_pct=pct)
            for h, src, s, pct in [
                ("a", "input_ulp", 0, 1e-6),
                ("a", "input_ulp", 1, 3e-6),
                ("a", "threads", 0, 2e-5),
                ("a", "precision", 0, 0.5),
                ("b", "input_ulp", 0, 0.25),
                ("b", "chunked", 0, 0.0),
            ]
        ]
    )
    table = summarise(movements)
    assert list(table.columns) == COLUMNS
    first = table.iloc[0].to_dict()
    assert first == dict(
        host="a",
        host_digest="a-digest",
        device="cpu",
        source="input_ulp",
        cases=2,
        median_rel_pct=2e-6,
        max_rel_pct=3e-6,
    )
    path = tmp_path / "floors.csv"
    table.to_csv(path, index=False, float_format="%.3g")
    # a float32 run's floor leaves out tabpfn's autocast; a run in that precision ("auto") counts it
    assert read_floors(path) == {("a", "cpu"): 2e-5, ("b", "cpu"): 0.25}
    assert read_floors(path, "auto") == {("a", "cpu"): 0.5, ("b", "cpu"): 0.25}
    gpu = table.assign(device="NVIDIA H200", max_rel_pct=table["max_rel_pct"] * 10)
    both, kept = merged(gpu, path)  # another device's rows join the table; the CPU's are kept
    assert kept == len(table) and len(both) == 2 * len(table)
    both.to_csv(path, index=False)
    assert read_floors(path)[("a", "NVIDIA H200")] == pytest.approx(2e-4) and read_floors(path)[("a", "cpu")] == 2e-5
    again, kept = merged(table, path)  # the CPU measured again replaces its own rows
    assert kept == len(table) and len(again) == 2 * len(table)


def test_a_table_from_before_the_device_column_is_the_cpus(tmp_path):
    path = tmp_path / "old.csv"
    pd.DataFrame(
        {
            "host": ["a"],
            "host_digest": ["d"],
            "source": ["threads"],
            "cases": [2],
            "median_rel_pct": [0.0],
            "max_rel_pct": [1e-5],
        }
    ).to_csv(path, index=False)
    assert read_floors(path) == {("a", "cpu"): 1e-5}


def test_read_floors_refuses_a_table_without_its_columns(tmp_path):
    path = tmp_path / "other.csv"
    pd.DataFrame({"host": ["a"], "rmse": [1.0]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="max_rel_pct"):
        read_floors(path)
