"""`retrofit.adapters.tabpfn_v3`'s closed model (o_closed): tabpfn_v3 and tabpfn_v3_5 (its
subclass) O-closed from the raw input to the readout (fast on a tiny random host of each, slow on
the shipped tiny_v3 and tiny_v3_5 with trained weights)."""

import numpy as np
import pytest
import torch
from devices import DEVICES
from synthetic import diabetes_split, fit_synthetic

import retrofit
from retrofit.adapters import OClosedModel
from retrofit.adapters.tabpfn_v3 import o_grouped_cells, o_standardised_cells, ordered_sum
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, make_regressor
from retrofit.ops.insertion import insert_rows, random_keep_mask
from retrofit.tabpfn_internals import nan_and_inf_indicator, preprocess_raw

REL_BOUND = 1e-5
"""Without compaction, present outputs move by at most this fraction of the logit scale."""


def _model_inputs(patched, X_test):
    """(x (R, B, C), y (N, B)) of every ensemble member, as tabpfn's engine builds them (members of
    one width: `_model_batches`)."""
    (batch,) = _model_batches(patched, X_test)
    return batch


def _model_batches(patched, X_test):
    """[(x (R, B, C), y (N, B))]: the ensemble members' inputs as tabpfn's engine builds them, one
    batch per input width (members whose preprocessing adds other columns run apart)."""
    by_width = {}
    for m in patched.executor_.ensemble_members:
        rows = np.concatenate([m.X_train, m.transform_X_test(X_test)])
        by_width.setdefault(rows.shape[1], []).append((rows, m.y_train))
    return [
        (
            torch.stack([torch.as_tensor(r, dtype=torch.float32) for r, _ in members], dim=1),
            torch.stack([torch.as_tensor(y, dtype=torch.float32) for _, y in members], dim=1),
        )
        for members in by_width.values()
    ]


def _insert_absent(x_RBC, y_NB, k, seed=0, fill=0.0):
    """x, y with k absent train rows, k absent test rows and k absent columns at random positions
    (cells `fill`), the presences, and the masks of the old rows / test rows."""
    g = torch.Generator().manual_seed(seed)
    R, B, C = x_RBC.shape
    N = y_NB.shape[0]
    old_train, old_test, old_col = (random_keep_mask(n, k, g) for n in (N, R - N, C))
    old_R = torch.cat([old_train, old_test])
    x = insert_rows(insert_rows(x_RBC, old_col, dim=2, fill=fill), old_R, dim=0, fill=fill)
    y = insert_rows(y_NB, old_train, dim=0, fill=fill)
    presence = {"row_presence": old_R.float().expand(B, -1), "column_presence": old_col.float().expand(B, -1)}
    return x, y, presence, old_test


CLOSED_ARCHITECTURES = ("tabpfn_v3", "tabpfn_v3_5")


@pytest.fixture(scope="module", params=CLOSED_ARCHITECTURES)
def random_closed(request, make_random_host):
    """A tiny random host of each architecture o_closed takes, fitted with 2 members."""
    return fit_synthetic(make_random_host(request.param), n_estimators=2, f=5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("arch", CLOSED_ARCHITECTURES)
def test_absent_rows_and_columns_change_no_present_output(make_random_host, arch, compact, device):
    regressor, X_test = fit_synthetic(make_random_host(arch), n_estimators=2, f=5, device=device)
    patched = retrofit.retrofit(regressor, "o_closed", compact=compact)
    x, y = (t.to(device) for t in _model_inputs(patched, X_test))
    with torch.inference_mode():
        reference = patched.models_[0](x, y)
        x_pad, y_pad, presence, old_test = _insert_absent(x.cpu(), y.cpu(), k=7)
        presence = {name: value.to(device) for name, value in presence.items()}
        padded = patched.models_[0](x_pad.to(device), y_pad.to(device), **presence)
        old_test = old_test.to(device)
    assert torch.all(padded[~old_test] == 0)  # an absent test row reads out exactly 0
    change = float((padded[old_test] - reference).abs().max())
    if compact:
        assert change == 0.0
    else:
        assert change <= REL_BOUND * float(reference.abs().max())


def test_absent_cells_are_ignored_whatever_they_hold(random_closed):
    regressor, X_test = random_closed
    model = retrofit.retrofit(regressor, "o_closed").models_[0]
    x, y = _model_inputs(retrofit.retrofit(regressor, "o_closed"), X_test)
    x_zero, y_zero, presence, _ = _insert_absent(x, y, k=3)
    x_nan, y_nan, _, _ = _insert_absent(x, y, k=3, fill=float("nan"))
    with torch.inference_mode():
        zeros, nans = model(x_zero, y_zero, **presence), model(x_nan, y_nan, **presence)
    assert torch.equal(zeros, nans)


def test_absent_rows_are_null_carriers_at_the_in_context_entry(random_closed):
    regressor, X_test = random_closed
    model = retrofit.retrofit(regressor, "o_closed").models_[0]
    x, y = _model_inputs(retrofit.retrofit(regressor, "o_closed"), X_test)
    x_pad, y_pad, presence, _ = _insert_absent(x, y, k=4)
    entry = []
    handle = model.host_model.icl_blocks[0].register_forward_pre_hook(lambda module, args: entry.append(args[0]))
    with torch.inference_mode():
        model(x_pad, y_pad, **presence)
    handle.remove()
    absent_R = presence["row_presence"][0] == 0
    assert torch.all(entry[0][:, absent_R] == 0) and torch.all(entry[0][:, ~absent_R].abs().sum(-1) > 0)


def test_nothing_absent_is_full_o_up_to_rounding(random_closed):
    regressor, X_test = random_closed
    closed = retrofit.retrofit(regressor, "o_closed").predict(X_test)
    full_o = retrofit.retrofit(regressor, "full_o").predict(X_test)
    assert np.max(np.abs(closed - full_o)) <= 1e-4 * np.max(np.abs(full_o))


def test_unpatch_restores_the_stock_models_and_predictions(random_closed):
    regressor, X_test = random_closed
    baseline = retrofit.retrofit(regressor, "baseline").predict(X_test)
    restored = retrofit.unpatch(retrofit.retrofit(regressor, "o_closed"))
    assert not any(isinstance(model, OClosedModel) for model in restored.models_)
    assert restored.executor_.model_caches[0].get_any() is restored.models_[0]
    np.testing.assert_array_equal(restored.predict(X_test), baseline)


def test_closed_variant_with_stock_in_context_parts_is_refused(random_closed):
    regressor, _ = random_closed
    with pytest.raises(RetrofitError, match=r"leaves the in-context parts \['ffn', 'norm'\] stock"):
        retrofit.retrofit(regressor, {**_o_closed_spec(), "adapters": ["o_attention"]})


@pytest.mark.parametrize(
    ("presence", "problem"),
    [({"row_presence": torch.ones(2, 5)}, "must be a"), ({"column_presence": torch.full((2, 5), 0.5)}, "other values")],
)
def test_bad_presence_is_refused(random_closed, presence, problem):
    regressor, X_test = random_closed
    patched = retrofit.retrofit(regressor, "o_closed")
    x, y = _model_inputs(patched, X_test)
    with pytest.raises(RetrofitError, match=problem):
        patched.models_[0](x, y, **presence)


def test_grouping_is_the_hosts_roll_when_every_column_is_present():
    cells_BRC = torch.randn(2, 6, 7)
    grouped = o_grouped_cells(cells_BRC, torch.ones(2, 7), group_size=3)
    expected = torch.stack([torch.roll(cells_BRC, shifts=-(2**i), dims=2) for i in range(3)], dim=-1)
    assert torch.equal(grouped, expected)


def test_grouping_skips_absent_columns():
    cells_BRC = torch.randn(1, 4, 5)
    p_BC = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0]])
    grouped = o_grouped_cells(cells_BRC, p_BC, group_size=2)
    present = cells_BRC[:, :, [0, 2, 3]]
    expected = torch.stack([torch.roll(present, shifts=-(2**i), dims=2) for i in range(2)], dim=-1)
    assert torch.equal(grouped[:, :, [0, 2, 3]], expected)


def test_ordered_sum_is_bitwise_unchanged_by_interleaved_zeros():
    x = torch.randn(3, 301, 4) * 1e3
    padded = insert_rows(x, random_keep_mask(301, 40, torch.Generator().manual_seed(0)), dim=1)
    assert torch.equal(ordered_sum(x, 1), ordered_sum(padded, 1))
    assert not torch.equal(x.sum(1), padded.sum(1))  # why the ordered sum exists


def test_standardisation_matches_the_hosts_scaler_when_everything_is_present(random_closed):
    regressor, _ = random_closed
    host = regressor.models_[0]
    x_RBC = torch.randn(40, 2, 5) * 3 + 1
    x_RBC[3, 0, 1] = float("nan")
    expected_BRC = preprocess_raw(host, x_RBC, 30)
    cells_BRC, indicator_BRC = o_standardised_cells(x_RBC.transpose(0, 1), torch.ones(2, 40, 5), 30)
    torch.testing.assert_close(cells_BRC, expected_BRC, rtol=1e-5, atol=1e-5)
    assert torch.equal(indicator_BRC, nan_and_inf_indicator(x_RBC).transpose(0, 1))


def _o_closed_spec():
    from retrofit.variants import load_variant

    return dict(load_variant("o_closed"))


@pytest.fixture(scope="module", params=("tiny_v3", "tiny_v3_5"))
def shipped_diabetes(request):
    """A shipped host fitted on diabetes (70/30 split seed 0, 8 members): (regressor, X_test, y_test)."""
    X_train, X_test, y_train, y_test = diabetes_split()
    regressor = make_regressor(get_path(request.param), n_estimators=8, random_state=0).fit(X_train, y_train)
    return regressor, X_test, y_test


@pytest.mark.slow
@pytest.mark.parametrize("compact", [False, True])
def test_shipped_host_absent_rows_and_columns_change_no_present_output(shipped_diabetes, compact):
    regressor, X_test, _ = shipped_diabetes
    patched = retrofit.retrofit(regressor, "o_closed", compact=compact)
    for x, y in _model_batches(patched, X_test):
        with torch.inference_mode():
            reference = patched.models_[0](x, y)
            x_pad, y_pad, presence, old_test = _insert_absent(x, y, k=16, seed=1)
            padded = patched.models_[0](x_pad, y_pad, **presence)
        change = float((padded[old_test] - reference).abs().max())
        assert change == 0.0 if compact else change <= REL_BOUND * float(reference.abs().max())


@pytest.mark.slow
def test_shipped_host_o_closed_rmse_is_the_baselines(shipped_diabetes):
    """On the trained tiny_v3 and tiny_v3_5 (diabetes, 70/30 split seed 0, 8 members), o_closed's
    RMSE is the baseline's within 1e-4 relative and full_o's within 1e-5 (the numbers:
    results/retrofit_rmse.csv)."""
    regressor, X_test, y_test = shipped_diabetes

    def rmse(variant):
        return float(np.sqrt(np.mean((retrofit.retrofit(regressor, variant).predict(X_test) - y_test) ** 2)))

    baseline, full_o, closed = rmse("baseline"), rmse("full_o"), rmse("o_closed")
    assert abs(closed - baseline) <= 1e-4 * baseline
    assert abs(closed - full_o) <= 1e-5 * baseline


def test_rank_rope_is_the_hosts_rope_at_positions_zero_to_s():
    from tabpfn.architectures.tabpfn_v3 import RotaryEmbedding

    from retrofit.adapters.tabpfn_v3 import _RankRope

    for interleaved in (False, True):
        rope = RotaryEmbedding(8, theta=100_000, interleaved=interleaved)
        t_bHSD = torch.randn(6, 2, 5, 8)  # b = B * R = 2 * 3
        rank = _RankRope(rope, torch.arange(7).expand(2, 7))
        assert torch.equal(rank(t_bHSD), rope.rotate_queries_or_keys(t_bHSD))


def test_report_lists_every_stage_outside_the_blocks_of_every_model(random_closed):
    """The report names each member's stages that carry weights outside the in-context blocks (the
    blocks are reported as patched blocks): nothing the closure took over goes unlisted."""
    regressor, _ = random_closed
    patched = retrofit.retrofit(regressor, "o_closed")
    stages = [
        f"{i}:{name}"
        for i, stock in enumerate(regressor.models_)
        for name, child in stock.named_children()
        if name != "icl_blocks" and any(True for _ in child.parameters())
    ]
    assert sorted(patched.retrofit_report_.closed) == sorted(stages) and stages
    assert retrofit.retrofit(regressor, "full_o").retrofit_report_.closed == ()
