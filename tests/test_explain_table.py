"""`benchmarks.removal_vs_refit.explain_table`: the explain benchmark's table on a small setting —
its rows, its refit references, its stage clocks and its refusals (shipped tiny hosts, slow)."""

import numpy as np
import pytest

from retrofit.errors import RetrofitError


@pytest.mark.slow
def test_explain_bench_small(tmp_path):
    from pathlib import Path

    from omegaconf import OmegaConf

    from benchmarks.removal_vs_refit.explain_table import COLUMNS, LOO_METHODS, METHODS, run
    from retrofit.data import DatasetSpec
    from retrofit.removal.stages import CLOSED_STAGES, REFIT_STAGES

    root = Path(__file__).resolve().parents[1]
    auto = DatasetSpec.from_mapping(OmegaConf.to_container(OmegaConf.load(root / "configs" / "dataset" / "auto.yaml")))

    cfg = OmegaConf.create(
        dict(
            datasets=["auto"],
            max_train_rows=30,
            exact_max_features=0,
            budget=8,
            repeats=2,
            n_loo_queries=4,
            output=str(tmp_path / "bench.csv"),
            plot=str(tmp_path / "bench.png"),
            example_plot=str(tmp_path / "example.png"),
            stages_output=str(tmp_path / "stages.csv"),
            n_stage_coalitions=4,
            example_dataset="auto",
            n_explain_batched=3,
        )
    )
    table, explained = run(cfg, [auto], root)
    assert tuple(table.columns) == COLUMNS
    assert [(item.host, item.dataset) for item in explained] == [("tiny_v3", "auto"), ("tiny_v3_5", "auto")]
    for _, rows in table.groupby("host", sort=False):
        assert list(zip(rows["index"], rows.method, strict=True)) == [
            *[("SV", m) for m in METHODS],
            *[("k-SII", m) for m in METHODS],
            *[("LOO", m) for m in LOO_METHODS],
        ]
    for reference in ("refit_shapiq", "refit_tabpfn"):
        refit = table[table.method == reference]
        assert (refit.speedup_vs_refit == 1).all() and (refit.max_abs_diff_vs_refit == 0).all()
    assert table[table["index"] != "LOO"].n_coalitions.eq(8).all()
    assert table.rounds.eq(np.where(table.method == "stock_zeroed", 1, 2)).all()  # the zeroed arm runs once
    assert table[table["index"] == "LOO"].n_coalitions.eq(31).all()
    for item in explained:
        # both sides share v(∅), and v(all) is the prediction of the closed vs the stock host (equal to rounding)
        phi = item.attributions
        reference = phi["SV", "refit_shapiq"]
        assert abs(phi["SV", "closed_batched"].sum() - reference.sum()) <= 1e-4 * np.abs(reference).sum()
        d = len(item.feature_names)
        assert phi["k-SII", "closed_batched"].shape == (1, d + d * (d - 1) // 2)
        assert phi["LOO", "closed_batched"].shape == phi["LOO", "refit_tabpfn"].shape == (1, 30)
    assert all((tmp_path / name).is_file() for name in ("bench.csv", "bench.png", "example.png", "stages.csv"))
    stages = explained[1].stages
    for method, parts in (("closed_batched", CLOSED_STAGES[:-1]), ("refit_shapiq", REFIT_STAGES[:-1])):
        # nested CPU clocks: no stage is negative and every timed one took time
        assert all(stages[method, part] >= 0 for part in parts) and stages[method, parts[0]] > 0
    # feature shuffling would make removal differ from a refit: the removal refuses it, naming the key
    with pytest.raises(RetrofitError, match=r"FEATURE_SHIFT_METHOD='shuffle'"):
        run(OmegaConf.merge(cfg, {"feature_shift_method": "shuffle", "hosts": ["tiny_v3"]}), [auto], root)
    with pytest.raises(RetrofitError, match="inference_preset: unknown inference preset 'leen'"):
        run(OmegaConf.merge(cfg, {"inference_preset": "leen"}), [auto], root)
