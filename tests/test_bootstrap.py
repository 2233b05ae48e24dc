"""The two-level cluster bootstrap (`retrofit.results.bootstrap`): datasets resampled, then seeds."""

import numpy as np
import pytest
import scipy.stats

from retrofit.results.bootstrap import cluster_bootstrap_ci


def test_cluster_bootstrap_of_identical_datasets_has_zero_width():
    assert cluster_bootstrap_ci([[0.3, 0.3, 0.3]] * 6) == (0.3, 0.3)
    assert np.isnan(cluster_bootstrap_ci([[0.3]])).all()


def test_cluster_bootstrap_resamples_datasets_then_seeds():
    means = np.random.default_rng(1).normal(0.1, 0.05, 6)
    # Seeds that agree within a dataset: the CI is the one-level bootstrap of the dataset means.
    low, high = cluster_bootstrap_ci([[m] * 3 for m in means])
    ref = scipy.stats.bootstrap((means,), np.mean, method="percentile", n_resamples=10_000, random_state=0)
    assert low == pytest.approx(ref.confidence_interval.low, abs=0.005)
    assert high == pytest.approx(ref.confidence_interval.high, abs=0.005)
    # Two identical datasets: the spread comes from the seeds alone (mean of 6 draws of {0.1, 0.2, 0.3}).
    assert cluster_bootstrap_ci([[0.1, 0.2, 0.3]] * 2) == pytest.approx((0.1333, 0.2667), abs=1e-3)
    assert cluster_bootstrap_ci([[0.1, 0.2, 0.3]] * 2, seed=0) == cluster_bootstrap_ci([[0.1, 0.2, 0.3]] * 2, seed=0)
