"""The synthetic prior: seeded, bounded, learnable, every family and corruption exercised."""

import pytest
import torch

from retrofit.pretrain.held_out import evaluate_baselines, make_validation_set
from retrofit.prior import FAMILIES, TableShape, sample_batch, sample_shape, zscore_targets
from retrofit.prior.inputs import sample_columns

SHAPE = TableShape(n_rows=120, n_features=6, n_train=60)


def _batch(seed: int, shape: TableShape = SHAPE, **kw):
    return sample_batch(shape, 64, torch.Generator().manual_seed(seed), **kw)


def test_same_seed_same_batch_and_other_seed_differs():
    a, b, c = _batch(3), _batch(3), _batch(4)
    assert torch.equal(a.y_RB, b.y_RB) and torch.equal(a.x_RBF.nan_to_num(7.0), b.x_RBF.nan_to_num(7.0))
    assert not torch.equal(a.y_RB, c.y_RB)


def test_layout_and_bounds():
    batch = _batch(0)
    assert batch.x_RBF.shape == (120, 64, 6) and batch.y_RB.shape == (120, 64)
    assert torch.isfinite(batch.y_RB).all()
    finite_x = batch.x_RBF[~torch.isnan(batch.x_RBF)]
    assert torch.isfinite(finite_x).all() and finite_x.abs().max() < 1e6
    z = zscore_targets(batch.y_RB, 60)
    assert z.abs().max() <= 8.0
    torch.testing.assert_close(z[:60].mean(0), torch.zeros(64), atol=1e-4, rtol=0)


def test_every_family_and_missing_values_occur_and_can_be_switched_off():
    batch = _batch(1)
    assert set(batch.family_B.tolist()) == set(range(len(FAMILIES)))
    assert torch.isnan(batch.x_RBF).any()
    assert not torch.isnan(_batch(1, p_missing_table=0.0).x_RBF).any()


def test_noise_level_is_within_its_stated_range():
    noise = _batch(2).noise_std_B
    assert noise.min() >= 0.01 - 1e-6 and noise.max() <= 1.0 + 1e-6


def test_shapes_respect_ranges_and_invalid_shapes_are_refused():
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        s = sample_shape(g, (30, 100), (1, 5))
        assert 30 <= s.n_rows <= 100 and 1 <= s.n_features <= 5 and 1 <= s.n_train < s.n_rows
    with pytest.raises(ValueError, match="n_train"):
        TableShape(n_rows=10, n_features=2, n_train=10)


def test_prior_is_learnable_by_simple_baselines():
    """The median held-out R² of ridge and of a random forest is clearly positive on 32 small prior
    tables (the prior is not noise)."""
    vset = make_validation_set("check", seed=5, n_batches=1, batch_size=32, rows=(60, 100), features=(1, 5))
    scores = evaluate_baselines(vset, max_datasets=32)
    assert scores["check_r2_rf"] > 0.15 and scores["check_r2_ridge"] > 0.1


def _mean_abs_correlation(p_independent: float) -> tuple[float, float]:
    """Mean off-diagonal |corr| of the function's inputs, and the share of tables with a pair
    correlated above 0.8 (64 tables, 400 rows, 8 numeric columns)."""
    g = torch.Generator().manual_seed(0)
    _, xs_BnF = sample_columns(64, 400, 8, g, p_categorical=0.0, p_independent=p_independent)
    corr_BFF = torch.stack([torch.corrcoef(table.T) for table in xs_BnF])
    off_BX = corr_BFF[:, ~torch.eye(8, dtype=torch.bool)].abs()
    return off_BX.mean().item(), (off_BX.amax(1) > 0.8).float().mean().item()


def test_columns_share_latent_factors_unless_switched_off():
    """Real tables have near-collinear columns; the prior must show the host some (a clear mean
    |corr| and most tables with a pair above 0.8) and none when independence is forced."""
    mean_corr, strong_share = _mean_abs_correlation(p_independent=0.0)
    assert mean_corr > 0.25 and strong_share > 0.4
    mean_corr, strong_share = _mean_abs_correlation(p_independent=1.0)
    assert mean_corr < 0.08 and strong_share == 0.0


def test_categorical_columns_are_integer_codes_in_range():
    x_BnF, xs_BnF = sample_columns(32, 200, 6, torch.Generator().manual_seed(1), p_categorical=1.0)
    assert torch.equal(x_BnF, x_BnF.floor()) and x_BnF.min() >= 0 and x_BnF.max() <= 9
    assert torch.isfinite(xs_BnF).all()


def test_categorical_columns_have_two_to_ten_levels_drawn_per_column():
    """Level counts vary per column over 2..10: binary factors occur, as in real tables."""
    x_BnF, _ = sample_columns(64, 400, 6, torch.Generator().manual_seed(2), p_categorical=1.0)
    counts = [len(torch.unique(x_BnF[b, :, f])) for b in range(64) for f in range(6)]
    assert min(counts) == 2 and max(counts) == 10


def test_near_linear_targets_are_mostly_linear():
    """A linear fit explains most, not all, of a `near_linear` signal (R² between 0.6 and 0.999)."""
    from retrofit.prior.functions import near_linear

    g = torch.Generator().manual_seed(3)
    xs_bnF = torch.randn(64, 300, 5, generator=g)
    f_bn = near_linear(xs_bnF, g)
    design_bnP = torch.cat([xs_bnF, torch.ones(64, 300, 1)], -1)
    coef = torch.linalg.lstsq(design_bnP, f_bn.unsqueeze(-1)).solution
    resid_bn = f_bn - (design_bnP @ coef).squeeze(-1)
    r2_b = 1 - resid_bn.var(1) / f_bn.var(1)
    assert 0.6 < r2_b.median() < 0.999 and r2_b.min() > 0.3
