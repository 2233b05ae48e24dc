"""The 95% CI of a mean ΔRMSE over cases that are datasets × seeds: a two-level (cluster) bootstrap.

Seeds of one dataset share its rows, so they are not independent draws; the datasets are. Each
bootstrap draw resamples the datasets with replacement, then, inside every drawn dataset, its seeds
with replacement, and takes the mean over all drawn cases (each drawn case weighs the same). The CI
is the 2.5 / 97.5 percentile of `n` such means. scipy.stats.bootstrap resamples one level only,
hence this short resampler; with one seed per dataset it is the ordinary percentile bootstrap of
the dataset values. `frame_ci` and `mean_with_ci` apply it to a frame of cases (one row per case).
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

N_BOOTSTRAP = 10_000


def cluster_bootstrap_ci(
    clusters: Sequence[Sequence[float]], seed: int = 0, n: int = N_BOOTSTRAP
) -> tuple[float, float]:
    """Percentile 95% CI of the mean over all values in `clusters` (one sequence of seed values per
    dataset), resampling clusters, then values within each drawn cluster. NaN with < 2 values."""
    sizes = np.array([len(c) for c in clusters])
    if sizes.sum() < 2:
        return float("nan"), float("nan")
    values_DS = np.full((len(clusters), sizes.max()), np.nan)
    for d, cluster in enumerate(clusters):
        values_DS[d, : len(cluster)] = cluster
    rng = np.random.default_rng(seed)
    d_ND = rng.integers(0, len(clusters), size=(n, len(clusters)))  # drawn datasets per draw
    s_NDS = np.floor(rng.random((n, len(clusters), sizes.max())) * sizes[d_ND][..., None]).astype(int)
    drawn_NDS = values_DS[d_ND[..., None], s_NDS]
    used_NDS = np.arange(sizes.max()) < sizes[d_ND][..., None]  # a dataset with k seeds draws k
    means_N = np.where(used_NDS, drawn_NDS, 0.0).sum(axis=(1, 2)) / used_NDS.sum(axis=(1, 2))
    low, high = np.percentile(means_N, [2.5, 97.5])
    return float(low), float(high)


def frame_ci(group: "pd.DataFrame", column: str = "delta_rmse_pct") -> tuple[float, float]:
    """`cluster_bootstrap_ci` of the mean `column` over the cases in `group` (clusters: its datasets)."""
    return cluster_bootstrap_ci([g.to_numpy() for _, g in group.groupby("dataset")[column]])


def mean_with_ci(group: "pd.DataFrame", column: str, scale: float = 1.0, digits: int = 4) -> str:
    """`mean [low, high]` of `scale` · `column` over `group` (the CI of `frame_ci`; none for one case)."""
    low, high = frame_ci(group, column)
    mean = f"{scale * group[column].mean():+.{digits}f}"
    return mean + (f" [{scale * low:+.{digits}f}, {scale * high:+.{digits}f}]" if len(group) > 1 else "")
