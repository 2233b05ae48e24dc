"""Input columns of the prior: numeric (normal, uniform, skewed, heavy-tailed, discrete) and
categorical, each with a random scale and shift, correlated through shared latent factors.

Columns are a Gaussian copula: standard-normal latents `u = (z + factors @ loadings) / norm`
(1-3 factors; loading strength drawn per table, zero in about a third of the tables) pushed through
each column's marginal. Real tables are full of near-collinear, heavy-tailed columns (College's
Accept/Enroll/F.Undergrad, Hitters' career totals); a host trained on independent columns adds up
their marginal effects and overshoots on the largest rows.

Contract: `sample_columns(B, n, F, g)` returns `x_BnF` (what the model sees, raw units) and
`xs_BnF` (what the function sees: each column standardised; a categorical column is replaced by a
random per-category level so that its effect is not monotone in the code). Both are finite.
"""

import math

import torch

NUMERIC_KINDS = ("normal", "uniform", "lognormal", "student_t", "discrete")
MAX_FACTORS = 3
MAX_LEVELS = 10


def standardise_rows(x_Bn: torch.Tensor) -> torch.Tensor:
    """Zero mean, unit std along the rows axis (dim 1) of each table; any trailing dims kept."""
    return (x_Bn - x_Bn.mean(1, keepdim=True)) / (x_Bn.std(1, keepdim=True) + 1e-6)


def _normal_cdf(u: torch.Tensor) -> torch.Tensor:
    return 0.5 * (1 + torch.erf(u / math.sqrt(2)))


def _latents(B: int, n: int, F: int, g: torch.Generator, p_independent: float) -> torch.Tensor:
    """`(B, n, F)` standard-normal latents; columns share 1-`MAX_FACTORS` factors with loadings
    of per-table strength U(0, 5) (correlations up to ~0.96), or none with `p_independent`."""
    z_BnF = torch.randn(B, n, F, generator=g)
    factors_BnK = torch.randn(B, n, MAX_FACTORS, generator=g)
    active_B1K = torch.arange(MAX_FACTORS) < torch.randint(1, MAX_FACTORS + 1, (B, 1, 1), generator=g)
    strength_B11 = 5 * torch.rand(B, 1, 1, generator=g) * (torch.rand(B, 1, 1, generator=g) >= p_independent)
    loadings_BFK = torch.randn(B, F, MAX_FACTORS, generator=g) * strength_B11 * active_B1K
    shared_BnF = factors_BnK @ loadings_BFK.transpose(1, 2)
    return (z_BnF + shared_BnF) / torch.sqrt(1 + loadings_BFK.pow(2).sum(-1)).unsqueeze(1)


def _numeric(u_BnF: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    B, n, F = u_BnF.shape
    kind_B1F = torch.randint(0, len(NUMERIC_KINDS), (B, 1, F), generator=g)
    uniform = 2 * _normal_cdf(u_BnF) - 1
    lognormal = torch.exp(1.5 * torch.rand(B, 1, F, generator=g) * u_BnF)
    # Student-t with 2-5 dof: heavy tails, clipped so the prior stays bounded.
    dof_B1F = torch.randint(2, 6, (B, 1, F), generator=g).float()
    chi2 = torch.randn(B, n, F, 5, generator=g).pow(2)
    chi2 = (chi2 * (torch.arange(5) < dof_B1F.unsqueeze(-1))).sum(-1)
    student_t = (u_BnF / torch.sqrt(chi2 / dof_B1F)).clamp(-50, 50)
    levels_B1F = torch.randint(2, 8, (B, 1, F), generator=g).float()
    discrete = torch.minimum(torch.floor(_normal_cdf(u_BnF) * levels_B1F), levels_B1F - 1)
    x = u_BnF
    for i, candidate in enumerate((uniform, lognormal, student_t, discrete), start=1):
        x = torch.where(kind_B1F == i, candidate, x)
    return x * torch.exp(torch.randn(B, 1, F, generator=g)) + 2 * torch.randn(B, 1, F, generator=g)


def sample_columns(
    B: int,
    n: int,
    F: int,
    g: torch.Generator,
    p_categorical: float = 0.3,
    p_independent: float = 0.35,
    max_levels: int = MAX_LEVELS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw `B` tables of `n` rows and `F` columns; returns `(x_BnF, xs_BnF)` (see module doc).
    `p_independent` is the share of tables whose columns share no latent factor; a categorical
    column (share `p_categorical`) has 2-`max_levels` levels, drawn per column (real tables are
    full of two- and three-level factors: Carseats' Urban/US, Wage's jobclass)."""
    u_BnF = _latents(B, n, F, g, p_independent)
    x_BnF = _numeric(u_BnF, g)
    xs_BnF = standardise_rows(x_BnF)
    is_cat_B1F = torch.rand(B, 1, F, generator=g) < p_categorical
    if is_cat_B1F.any():
        levels_B1F = torch.randint(2, max_levels + 1, (B, 1, F), generator=g)
        # Skewed category frequencies: square the latent's uniform score before coding.
        codes_BnF = torch.minimum(torch.floor(_normal_cdf(u_BnF).pow(2) * levels_B1F), levels_B1F - 1).long()
        levels_BFL = torch.randn(B, F, max_levels, generator=g)
        effect_BnF = torch.gather(
            levels_BFL.unsqueeze(1).expand(B, n, F, max_levels), 3, codes_BnF.unsqueeze(-1)
        ).squeeze(-1)
        x_BnF = torch.where(is_cat_B1F, codes_BnF.float(), x_BnF)
        xs_BnF = torch.where(is_cat_B1F, standardise_rows(effect_BnF), xs_BnF)
    return x_BnF, xs_BnF
