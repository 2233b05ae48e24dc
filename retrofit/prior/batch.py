"""Batches of prior datasets sharing one table shape, in TabPFN's training layout.

Layout (the architectures' own): `x_RBF (rows, B, F)`, `y_RB (rows, B)`; the first `n_train`
rows are the in-context training rows. Contract: for a fixed generator state the batch is
identical (seeded); every y is finite; x is finite except for the deliberately missing entries
(NaN), of which there are none when `p_missing_table == 0`.
"""

import math
from dataclasses import dataclass

import torch

from retrofit.prior.functions import FUNCTION_FAMILIES
from retrofit.prior.inputs import sample_columns, standardise_rows

FAMILIES: tuple[str, ...] = tuple(FUNCTION_FAMILIES)


@dataclass(frozen=True)
class TableShape:
    """Rows, features and in-context training rows shared by a batch."""

    n_rows: int
    n_features: int
    n_train: int

    def __post_init__(self) -> None:
        if not (1 <= self.n_train < self.n_rows) or self.n_features < 1:
            raise ValueError(f"invalid table shape {self}: need 1 <= n_train < n_rows, n_features >= 1")


@dataclass(frozen=True)
class PriorBatch:
    x_RBF: torch.Tensor
    y_RB: torch.Tensor
    family_B: torch.Tensor
    noise_std_B: torch.Tensor
    shape: TableShape


def sample_shape(
    g: torch.Generator,
    rows: tuple[int, int],
    features: tuple[int, int],
    train_fraction: tuple[float, float] = (0.4, 0.6),
) -> TableShape:
    """Uniform rows in `rows`, features in `features` (inclusive), train fraction in the range."""
    n = int(torch.randint(rows[0], rows[1] + 1, (1,), generator=g))
    F = int(torch.randint(features[0], features[1] + 1, (1,), generator=g))
    frac = float(torch.empty(1).uniform_(*train_fraction, generator=g))
    return TableShape(n_rows=n, n_features=F, n_train=min(max(int(n * frac), 1), n - 1))


def sample_batch(
    shape: TableShape,
    batch_size: int,
    g: torch.Generator,
    *,
    p_missing_table: float = 0.15,
    p_skewed_target: float = 0.25,
) -> PriorBatch:
    """Draw `batch_size` datasets of `shape` (see module doc for layout and guarantees).

    Per dataset: a function family from `FAMILIES`; observation noise with std log-uniform in
    [0.01, 1] x signal; with probability `p_skewed_target` a log-normal-like (exp) target; a
    random target scale and shift; with probability `p_missing_table` up to 20% of x entries
    set to NaN after the target is computed (missing at random, not informative).
    """
    B, n, F = batch_size, shape.n_rows, shape.n_features
    x_BnF, xs_BnF = sample_columns(B, n, F, g)
    family_B = torch.randint(0, len(FAMILIES), (B,), generator=g)
    f_Bn = torch.zeros(B, n)
    for index, family in enumerate(FUNCTION_FAMILIES.values()):
        members = family_B == index
        if members.any():
            f_Bn[members] = standardise_rows(family(xs_BnF[members], g))
    log_lo, log_hi = math.log(0.01), math.log(1.0)
    noise_std_B = torch.exp(torch.empty(B).uniform_(log_lo, log_hi, generator=g))
    y_Bn = f_Bn + noise_std_B[:, None] * torch.randn(B, n, generator=g)
    skewed_B1 = torch.rand(B, 1, generator=g) < p_skewed_target
    y_Bn = torch.where(skewed_B1, torch.exp(0.7 * standardise_rows(y_Bn)), y_Bn)
    y_Bn = y_Bn * torch.exp(torch.randn(B, 1, generator=g)) + 3 * torch.randn(B, 1, generator=g)
    missing_B11 = torch.rand(B, 1, 1, generator=g) < p_missing_table
    rate_B11 = 0.2 * torch.rand(B, 1, 1, generator=g)
    drop_BnF = missing_B11 & (torch.rand(B, n, F, generator=g) < rate_B11)
    x_BnF = x_BnF.masked_fill(drop_BnF, float("nan"))
    return PriorBatch(
        x_RBF=x_BnF.transpose(0, 1).contiguous(),
        y_RB=y_Bn.transpose(0, 1).contiguous(),
        family_B=family_B,
        noise_std_B=noise_std_B,
        shape=shape,
    )


def zscore_targets(y_RB: torch.Tensor, n_train: int, clip: float = 8.0) -> torch.Tensor:
    """Standardise each dataset's y by its training rows' mean/std, clipped to +-clip."""
    mu_1B = y_RB[:n_train].mean(0, keepdim=True)
    sd_1B = y_RB[:n_train].std(0, keepdim=True).clamp_min(1e-6)
    return ((y_RB - mu_1B) / sd_1B).clamp(-clip, clip)
