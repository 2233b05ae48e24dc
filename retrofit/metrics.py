"""Prediction metrics: RMSE of the mean prediction, and NLL, CRPS and interval coverage of the whole
predictive distribution TabPFN's regressor gives every test row.

`BarPredictive` is tabpfn's `FullSupportBarDistribution` in the units of y, one per test row: K
buckets between borders b_0 < … < b_K, with probabilities p_k = softmax(logits)_k. Inner buckets
(1 ≤ k ≤ K−2) are uniform on [b_k, b_{k+1}]; bucket 0 is the left tail b_1 − |N(0, s_0²)| and bucket
K−1 the right tail b_{K−1} + |N(0, s_{K−1}²)|, with s = (bucket width) / Φ⁻¹(3/4), so that half of a
tail's mass lies inside its bucket. With C_k = p_0 + … + p_{k−1} and Φ̄ = 1 − Φ, the CDF is

    F(z) = 2 p_0 Φ̄((b_1 − z) / s_0)                    z < b_1
    F(z) = C_k + p_k (z − b_k) / (b_{k+1} − b_k)        b_k ≤ z < b_{k+1},  1 ≤ k ≤ K−2
    F(z) = 1 − 2 p_{K−1} Φ̄((z − b_{K−1}) / s_{K−1})    z ≥ b_{K−1}

All three scores are exact for this F (float64, no sampling, no grid):
- NLL: −log f(y), f the density above (p_k / width inside, p · 2/s · φ(distance / s) in a tail).
- CRPS: ∫ (F(z) − 1{z ≥ y})² dz, summed piece by piece. On an inner bucket F is linear, and the
  integral of the square of a linear function from a to b over a length L is L (a² + ab + b²) / 3
  (the bucket holding y is split at y). On a tail of mass p and scale s, with a = (how far y lies
  beyond the tail's anchor b_1 or b_{K−1}, into the tail, or 0) / s, the integral is
  s (a − 4p J(a) + 4p² I), where J(a) = ∫_0^a Φ̄ = a Φ̄(a) − φ(a) + φ(0) and
  I = ∫_0^∞ Φ̄² = 1/√(2π) − 1/(2√π).
- Quantiles: F⁻¹, as tabpfn's `FullSupportBarDistribution.icdf` computes it.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from retrofit.errors import RetrofitError

TAIL_SCALE = float(ndtri(0.75))
"""A tail's bucket width / its half-normal scale: Φ⁻¹(3/4), the half-normal's median at scale 1."""
_PHI_0 = 1.0 / math.sqrt(2.0 * math.pi)
_TAIL_SQUARE = _PHI_0 - 1.0 / (2.0 * math.sqrt(math.pi))
"""I = ∫_0^∞ Φ̄(u)² du (see the module docstring)."""
INTERVAL_90 = (0.05, 0.95)
"""The quantiles bounding the central 90 % interval of `coverage_90`."""


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error of `y_pred` against `y_true` (same length), in float64."""
    diff = np.asarray(y_true, dtype="float64") - np.asarray(y_pred, dtype="float64")
    return float(np.sqrt(np.mean(diff**2)))


@dataclass(frozen=True)
class BarPredictive:
    """N predictive distributions over the same K ≥ 2 buckets (see the module docstring).

    `logits_NK`: unnormalised log-probabilities of the buckets per row (−inf allowed: mass 0).
    `borders_B`: the K + 1 bucket borders in the units of y, strictly increasing (B = K + 1).
    Stored as float64; RetrofitError on bad shapes or values.
    """

    logits_NK: np.ndarray
    borders_B: np.ndarray

    def __post_init__(self) -> None:
        logits_NK = np.asarray(self.logits_NK, dtype="float64")
        borders_B = np.asarray(self.borders_B, dtype="float64")
        if borders_B.ndim != 1 or len(borders_B) < 3:
            raise RetrofitError(f"bar distribution: need at least 3 borders (2 buckets), got shape {borders_B.shape}")
        if not (np.isfinite(borders_B).all() and (np.diff(borders_B) > 0).all()):
            raise RetrofitError("bar distribution: borders must be finite and strictly increasing")
        if logits_NK.ndim != 2 or logits_NK.shape[1] != len(borders_B) - 1:
            raise RetrofitError(
                f"bar distribution: logits of shape {logits_NK.shape} do not match {len(borders_B) - 1} buckets; "
                "pass one row of K logits per test row for K + 1 borders"
            )
        if np.isnan(logits_NK).any() or (logits_NK == np.inf).any() or not np.isfinite(logits_NK.max(axis=1)).all():
            raise RetrofitError("bar distribution: logits must be finite or -inf, with a finite value in every row")
        object.__setattr__(self, "logits_NK", logits_NK)
        object.__setattr__(self, "borders_B", borders_B)

    @classmethod
    def from_tabpfn(cls, full: Mapping[str, Any]) -> "BarPredictive":
        """The distribution of `TabPFNRegressor.predict(X, output_type="full")`.

        tabpfn's `logits` are log-probabilities over the buckets of its target-standardised
        (z-space) distribution; its `criterion` has the same buckets with borders mapped to y
        (b_y = b_z · std + mean), so densities here are in 1/y-units: NLL_y = NLL_z + log std.
        """
        borders = full["criterion"].borders
        return cls(full["logits"].detach().cpu().double().numpy(), borders.detach().cpu().double().numpy())

    @property
    def n_buckets(self) -> int:
        return len(self.borders_B) - 1

    def _widths(self) -> np.ndarray:
        return np.diff(self.borders_B)

    def _tail_scales(self) -> tuple[float, float]:
        widths_K = self._widths()
        return widths_K[0] / TAIL_SCALE, widths_K[-1] / TAIL_SCALE

    def _log_probs(self) -> np.ndarray:
        shifted_NK = self.logits_NK - self.logits_NK.max(axis=1, keepdims=True)
        return shifted_NK - np.log(np.exp(shifted_NK).sum(axis=1, keepdims=True))

    def _probs(self) -> np.ndarray:
        return np.exp(self._log_probs())

    def _targets(self, y_N: np.ndarray) -> np.ndarray:
        y_N = np.asarray(y_N, dtype="float64")
        if y_N.shape != self.logits_NK.shape[:1] or not np.isfinite(y_N).all():
            raise RetrofitError(f"bar distribution: need {len(self.logits_NK)} finite targets, got shape {y_N.shape}")
        return y_N

    def nll(self, y_N: np.ndarray) -> np.ndarray:
        """−log f(y) per row (f in 1/y-units); +inf where y falls in a bucket of mass 0."""
        y_N = self._targets(y_N)
        K, b = self.n_buckets, self.borders_B
        bucket_N = np.clip(np.searchsorted(b, y_N, side="right") - 1, 0, K - 1)
        log_p_N = np.take_along_axis(self._log_probs(), bucket_N[:, None], axis=1)[:, 0]
        s_left, s_right = self._tail_scales()
        inner_N = -np.log(self._widths()[bucket_N])
        left_N = math.log(2.0 / s_left) - 0.5 * ((b[1] - y_N) / s_left) ** 2 + math.log(_PHI_0)
        right_N = math.log(2.0 / s_right) - 0.5 * ((y_N - b[-2]) / s_right) ** 2 + math.log(_PHI_0)
        log_shape_N = np.where(bucket_N == 0, left_N, np.where(bucket_N == K - 1, right_N, inner_N))
        return -(log_p_N + log_shape_N)

    def crps(self, y_N: np.ndarray) -> np.ndarray:
        """∫ (F(z) − 1{z ≥ y})² dz per row, exact (module docstring), in y-units."""
        y_N = self._targets(y_N)
        b, p_NK = self.borders_B, self._probs()
        # Inner buckets k = 1 … K−2: F runs linearly from C_k at b_k to C_{k+1} at b_{k+1}.
        C_NB = np.concatenate([np.zeros((len(y_N), 1)), np.cumsum(p_NK, axis=1)], axis=1)
        lo_I, hi_I = b[1:-2], b[2:-1]
        F_lo_NI, F_hi_NI = C_NB[:, 1:-2], C_NB[:, 2:-1]
        y_NI = np.clip(y_N[:, None], lo_I, hi_I)
        F_y_NI = F_lo_NI + (F_hi_NI - F_lo_NI) * (y_NI - lo_I) / (hi_I - lo_I)
        below_NI = (y_NI - lo_I) * _mean_square(F_lo_NI, F_y_NI)
        above_NI = (hi_I - y_NI) * _mean_square(1.0 - F_y_NI, 1.0 - F_hi_NI)
        s_left, s_right = self._tail_scales()
        left_N = _tail_crps(p_NK[:, 0], s_left, np.maximum(b[1] - y_N, 0.0) / s_left)
        right_N = _tail_crps(p_NK[:, -1], s_right, np.maximum(y_N - b[-2], 0.0) / s_right)
        return (below_NI + above_NI).sum(axis=1) + left_N + right_N

    def quantile(self, q: float) -> np.ndarray:
        """F⁻¹(q) per row, 0 < q < 1 (as tabpfn's `FullSupportBarDistribution.icdf`)."""
        if not 0.0 < q < 1.0:
            raise RetrofitError(f"bar distribution: quantile level must lie in (0, 1), got {q!r}")
        K, b = self.n_buckets, self.borders_B
        p_NK = self._probs()
        cum_NK = np.cumsum(p_NK, axis=1)
        cum_NK[:, -1] = 1.0
        bucket_N = np.minimum((cum_NK < q).sum(axis=1), K - 1)
        rows = np.arange(len(p_NK))
        before_N = cum_NK[rows, bucket_N] - p_NK[rows, bucket_N]
        share_N = np.clip((q - before_N) / p_NK[rows, bucket_N], 0.0, 1.0)
        s_left, s_right = self._tail_scales()
        inner_N = b[bucket_N] + self._widths()[bucket_N] * share_N
        with np.errstate(divide="ignore"):
            left_N = b[1] - s_left * ndtri(1.0 - share_N / 2.0)
            right_N = b[-2] + s_right * ndtri((1.0 + share_N) / 2.0)
        return np.where(bucket_N == 0, left_N, np.where(bucket_N == K - 1, right_N, inner_N))

    def coverage(self, y_N: np.ndarray, interval: tuple[float, float] = INTERVAL_90) -> float:
        """Share of rows with F⁻¹(low) ≤ y ≤ F⁻¹(high) for `interval` = (low, high)."""
        y_N = self._targets(y_N)
        low, high = interval
        return float(np.mean((self.quantile(low) <= y_N) & (y_N <= self.quantile(high))))


def _mean_square(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean of the square of the linear function running from `a` to `b`: (a² + ab + b²) / 3."""
    return (a * a + a * b + b * b) / 3.0


def _tail_crps(p_N: np.ndarray, scale: float, a_N: np.ndarray) -> np.ndarray:
    """A tail's share of the CRPS: s (a − 4p J(a) + 4p² I) (module docstring)."""
    J_N = a_N * ndtr(-a_N) - np.exp(-0.5 * a_N**2) * _PHI_0 + _PHI_0
    return scale * (a_N - 4.0 * p_N * J_N + 4.0 * p_N**2 * _TAIL_SQUARE)


@dataclass(frozen=True)
class DistributionScores:
    """Mean NLL and CRPS over the test rows, and the coverage of the central 90 % interval."""

    nll: float
    crps: float
    coverage_90: float

    @classmethod
    def of(cls, y_N: np.ndarray, predictive: BarPredictive) -> "DistributionScores":
        return cls(float(predictive.nll(y_N).mean()), float(predictive.crps(y_N).mean()), predictive.coverage(y_N))

    def matched(self, baseline: "DistributionScores") -> dict[str, float]:
        """The results columns of these scores against the same case's `baseline`: each score, its
        baseline value and the matched delta (NLL: difference, nats; CRPS: % of the baseline's;
        coverage: difference of shares)."""
        scores = {
            "nll": self.nll,
            "baseline_nll": baseline.nll,
            "crps": self.crps,
            "baseline_crps": baseline.crps,
            "coverage_90": self.coverage_90,
            "baseline_coverage_90": baseline.coverage_90,
        }
        return scores | matched_deltas(scores)


MATCHED_DELTAS = {
    "delta_rmse_pct": ("rmse", "baseline_rmse", "pct"),
    "delta_nll": ("nll", "baseline_nll", "difference"),
    "delta_crps_pct": ("crps", "baseline_crps", "pct"),
    "delta_coverage_90": ("coverage_90", "baseline_coverage_90", "difference"),
}
"""Each matched delta column -> (its score column, the baseline's, how it is taken): `pct`, in % of
the baseline's; `difference`, score − baseline. The one formula of every delta a results row holds."""


def matched_deltas(row: Mapping[str, Any]) -> dict[str, float]:
    """The `MATCHED_DELTAS` that `row` holds both scores of, computed from them."""
    deltas = {}
    for name, (score, base, kind) in MATCHED_DELTAS.items():
        if score in row and base in row:
            value, reference = (math.nan if row[c] is None else float(row[c]) for c in (score, base))
            deltas[name] = 100.0 * (value - reference) / reference if kind == "pct" else value - reference
    return deltas
