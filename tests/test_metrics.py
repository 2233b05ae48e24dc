"""Distribution metrics: hand-computable distributions, tabpfn's own bar distribution, the runner."""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import integrate
from tabpfn.architectures.shared.bar_distribution import FullSupportBarDistribution

import retrofit
from retrofit.data import DatasetSpec
from retrofit.errors import RetrofitError
from retrofit.fitting import CaseSpec, fit_case
from retrofit.hosts import available, get_path
from retrofit.metrics import BarPredictive, DistributionScores
from retrofit.runner.case import UnitSpec, run_case

NO_MASS = -np.inf


def uniform_on(a: float, b: float, n_rows: int) -> BarPredictive:
    """U[a, b] as a bar distribution: every mass in the one inner bucket [a, b], tails empty."""
    return BarPredictive(np.tile([NO_MASS, 0.0, NO_MASS], (n_rows, 1)), np.array([a - 1.0, a, b, b + 1.0]))


def uniform_crps(a: float, b: float, y: float) -> float:
    """CRPS of U[a, b] at y: ((y−a)³ + (b−y)³) / (3 (b−a)²) inside, distance + (b−a)/3 outside."""
    w = b - a
    if y < a:
        return a - y + w / 3
    if y > b:
        return y - b + w / 3
    return ((y - a) ** 3 + (b - y) ** 3) / (3 * w**2)


# --- distributions with known answers ---------------------------------------------------------


@pytest.mark.parametrize("y", [1.5, 1.0, 2.999, 0.0, 5.0, 1.2])
def test_single_bucket_is_the_uniform_distribution(y):
    dist = uniform_on(1.0, 3.0, 1)
    assert dist.crps(np.array([y]))[0] == pytest.approx(uniform_crps(1.0, 3.0, y), rel=1e-12)
    if 1.0 <= y < 3.0:
        assert dist.nll(np.array([y]))[0] == pytest.approx(math.log(2.0), rel=1e-12)
    else:
        assert dist.nll(np.array([y]))[0] == np.inf
    assert dist.quantile(0.05)[0] == pytest.approx(1.1) and dist.quantile(0.95)[0] == pytest.approx(2.9)


def test_equal_bars_add_up_to_one_uniform():
    # Three inner buckets of width 1 and mass 1/3 each: U[0, 3]; y in every bucket and outside.
    y = np.array([0.2, 1.5, 2.9, -1.0, 4.0])
    dist = BarPredictive(np.tile([NO_MASS, 0.0, 0.0, 0.0, NO_MASS], (len(y), 1)), np.arange(-1.0, 5.0))
    np.testing.assert_allclose(dist.crps(y), [uniform_crps(0.0, 3.0, v) for v in y], rtol=1e-12)
    np.testing.assert_allclose(dist.nll(y), [math.log(3.0)] * 3 + [np.inf] * 2, rtol=1e-12)
    np.testing.assert_allclose(dist.quantile(0.05), 0.15)
    np.testing.assert_allclose(dist.quantile(0.95), 2.85)
    assert dist.coverage(y) == pytest.approx(2 / 5)  # 0.2 and 1.5 inside [0.15, 2.85]; 2.9, -1, 4 outside


def test_a_lone_left_tail_is_a_half_normal():
    # All mass in bucket 0: X = b_1 − s|Z|, s = w_0 / Φ⁻¹(3/4); its median is b_0 by construction.
    borders = np.array([0.0, 2.0, 3.0, 4.0])
    dist = BarPredictive(np.array([[0.0, NO_MASS, NO_MASS]]), borders)
    s = 2.0 / 0.6744897501960817
    assert dist.quantile(0.5)[0] == pytest.approx(0.0, abs=1e-12)
    assert dist.nll(np.array([2.0 - s]))[0] == pytest.approx(-math.log(2 / s * math.exp(-0.5) / math.sqrt(2 * math.pi)))
    # CRPS of a half-normal at its anchor: E|X − b_1| − E|X − X'| / 2 = 2 s (√2 − 1) / √π.
    assert dist.crps(np.array([2.0]))[0] == pytest.approx(2 * s * (math.sqrt(2) - 1) / math.sqrt(math.pi), rel=1e-12)


def test_change_of_units_carries_the_jacobian():
    rng = np.random.default_rng(1)
    logits, borders = rng.normal(size=(40, 12)), np.sort(rng.normal(size=13))
    y_z = rng.normal(size=40) * 1.5
    mean, std = 152.1, 79.3
    z_space, y_space = BarPredictive(logits, borders), BarPredictive(logits, borders * std + mean)
    y = y_z * std + mean
    np.testing.assert_allclose(y_space.nll(y), z_space.nll(y_z) + math.log(std), rtol=1e-12)
    np.testing.assert_allclose(y_space.crps(y), z_space.crps(y_z) * std, rtol=1e-10)
    assert y_space.coverage(y) == z_space.coverage(y_z)


# --- against tabpfn's FullSupportBarDistribution ----------------------------------------------


@pytest.fixture(scope="module")
def random_bars():
    """Random logits over 8 buckets, and targets deep in both tails, beyond the borders and inside."""
    rng = np.random.default_rng(0)
    borders = np.sort(rng.normal(size=9)) * 3
    logits = rng.normal(size=(7, 8)) * 2
    y = np.array([borders[0] - 2, borders[1] - 0.3, 0.1, borders[-2] + 0.5, borders[-1] + 3, borders[4] + 0.01, 0.7])
    return BarPredictive(logits, borders), FullSupportBarDistribution(torch.tensor(borders)), torch.tensor(logits), y


def test_nll_and_quantiles_match_tabpfn(random_bars):
    dist, criterion, logits, y = random_bars
    np.testing.assert_allclose(dist.nll(y), criterion(logits, torch.tensor(y)).numpy(), rtol=1e-12)
    for q in (0.001, 0.05, 0.5, 0.95, 0.999):
        np.testing.assert_allclose(dist.quantile(q), criterion.icdf(logits, q).numpy(), rtol=1e-12, atol=1e-12)


def numerical_crps(criterion: FullSupportBarDistribution, logits_1K: torch.Tensor, y: float) -> float:
    """∫ (F(z) − 1{z ≥ y})² dz by adaptive quadrature, F = tabpfn's cdf, split at every border and at y."""

    def integrand(z: float) -> float:
        return (criterion.cdf(logits_1K, torch.tensor([[z]], dtype=torch.float64)).item() - float(z >= y)) ** 2

    cuts = sorted([*criterion.borders.tolist(), y])
    pieces = [(-np.inf, cuts[0]), *itertools.pairwise(cuts), (cuts[-1], np.inf)]
    return sum(integrate.quad(integrand, a, b, limit=200, epsabs=1e-12)[0] for a, b in pieces)


def test_crps_is_the_integral_of_tabpfns_cdf(random_bars):
    dist, criterion, logits, y = random_bars
    expected = [numerical_crps(criterion, logits[i : i + 1], target) for i, target in enumerate(y)]
    np.testing.assert_allclose(dist.crps(y), expected, rtol=1e-8)


def test_bad_distributions_are_refused():
    with pytest.raises(RetrofitError, match="strictly increasing"):
        BarPredictive(np.zeros((1, 2)), np.array([0.0, 2.0, 1.0]))
    with pytest.raises(RetrofitError, match="do not match 3 buckets"):
        BarPredictive(np.zeros((1, 2)), np.arange(4.0))
    with pytest.raises(RetrofitError, match="finite value in every row"):
        BarPredictive(np.array([[NO_MASS, NO_MASS]]), np.arange(3.0))
    with pytest.raises(RetrofitError, match="lie in"):
        uniform_on(0.0, 1.0, 1).quantile(1.0)
    with pytest.raises(RetrofitError, match="need 1 finite targets"):
        uniform_on(0.0, 1.0, 1).crps(np.array([0.5, np.nan]))


def test_matched_deltas():
    base, variant = DistributionScores(2.0, 4.0, 0.9), DistributionScores(2.5, 5.0, 0.85)
    columns = variant.matched(base)
    assert columns["delta_nll"] == 0.5 and columns["delta_crps_pct"] == 25.0
    assert columns["delta_coverage_90"] == pytest.approx(-0.05) and columns["baseline_coverage_90"] == 0.9
    assert set(base.matched(base)[k] for k in ("delta_nll", "delta_crps_pct", "delta_coverage_90")) == {0.0}


# --- tabpfn's predictions and the runner --------------------------------------------------------


def fitted(spec: DatasetSpec, host_path: Path, **settings) -> tuple:
    """The stock regressor fitted on `spec`'s seed-0 split, and the split (`retrofit.fitting`)."""
    case = fit_case(CaseSpec(spec, 0, host_path, Path("."), **settings))
    return case.regressor, case.data


def check_full_output(regressor, data) -> None:
    """For the stock host and `oa_only`: the full output's mean is `predict(X)` bit for bit, and
    the adapter reads tabpfn's distribution (its quantiles, its z-space loss + log std)."""
    for variant in ("baseline", "oa_only"):
        patched = retrofit.retrofit(regressor, variant)
        full = patched.predict(data.X_test, output_type="full", quantiles=[0.05, 0.95])
        np.testing.assert_array_equal(full["mean"], patched.predict(data.X_test))
        dist = BarPredictive.from_tabpfn(full)
        np.testing.assert_allclose(dist.quantile(0.05), full["quantiles"][0], rtol=1e-5)
        np.testing.assert_allclose(dist.quantile(0.95), full["quantiles"][1], rtol=1e-5)
        y_z = torch.tensor((data.y_test - regressor.y_train_mean_) / regressor.y_train_std_)
        z_space = FullSupportBarDistribution(regressor.znorm_space_bardist_.borders.double())
        z_nll = z_space(full["logits"].double(), y_z).numpy()
        np.testing.assert_allclose(dist.nll(data.y_test), z_nll + math.log(regressor.y_train_std_), rtol=1e-5)


def test_full_output_on_a_random_host(make_random_host, dataset_spec):
    check_full_output(*fitted(dataset_spec("diabetes"), make_random_host("tabpfn_v3"), n_estimators=1))


@pytest.mark.slow
@pytest.mark.parametrize("host", available())
def test_full_output_on_the_shipped_hosts(host, dataset_spec):
    check_full_output(*fitted(dataset_spec("diabetes"), get_path(host)))


def test_runner_rows_carry_the_distribution_columns(make_random_host, tmp_path, make_case):
    units = (UnitSpec("baseline"), UnitSpec("oa_only"))
    case = make_case(make_random_host("tabpfn_v3"), tmp_path, "carseats", units=units, n_estimators=1)
    baseline, oa_only = run_case(case)
    assert baseline["delta_nll"] == baseline["delta_crps_pct"] == baseline["delta_coverage_90"] == 0.0
    assert baseline["nll"] == baseline["baseline_nll"] == oa_only["baseline_nll"]
    assert np.isfinite([oa_only[k] for k in ("nll", "crps", "coverage_90", "delta_nll", "delta_crps_pct")]).all()
    assert oa_only["delta_nll"] == oa_only["nll"] - oa_only["baseline_nll"] != 0.0
    assert 0.0 <= oa_only["coverage_90"] <= 1.0 and oa_only["crps"] > 0.0
