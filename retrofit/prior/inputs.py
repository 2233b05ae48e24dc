"""Input columns of the prior: numeric (normal, uniform, skewed, heavy-tailed, discrete) and
categorical, each with a random scale and shift.

Contract: `sample_columns(B, n, F, g)` returns `x_BnF` (what the model sees, raw units) and
`xs_BnF` (what the function sees: each column standardised; a categorical column is replaced by a
random per-category level so that its effect is not monotone in the code). Both are finite.
"""

import torch

NUMERIC_KINDS = ("normal", "uniform", "lognormal", "student_t", "discrete")


def _standardise(x_BnF: torch.Tensor) -> torch.Tensor:
    return (x_BnF - x_BnF.mean(1, keepdim=True)) / (x_BnF.std(1, keepdim=True) + 1e-6)


def _numeric(B: int, n: int, F: int, g: torch.Generator) -> torch.Tensor:
    kind_B1F = torch.randint(0, len(NUMERIC_KINDS), (B, 1, F), generator=g)
    normal = torch.randn(B, n, F, generator=g)
    uniform = torch.rand(B, n, F, generator=g) * 2 - 1
    lognormal = torch.exp(torch.rand(B, 1, F, generator=g) * torch.randn(B, n, F, generator=g))
    # Student-t with 2-5 dof: heavy tails, clipped so the prior stays bounded.
    dof_B1F = torch.randint(2, 6, (B, 1, F), generator=g).float()
    chi2 = torch.randn(B, n, F, 5, generator=g).pow(2)
    chi2 = (chi2 * (torch.arange(5) < dof_B1F.unsqueeze(-1))).sum(-1)
    student_t = (torch.randn(B, n, F, generator=g) / torch.sqrt(chi2 / dof_B1F)).clamp(-50, 50)
    levels_B1F = torch.randint(2, 8, (B, 1, F), generator=g).float()
    discrete = torch.floor(torch.rand(B, n, F, generator=g) * levels_B1F)
    x = normal
    for i, candidate in enumerate((uniform, lognormal, student_t, discrete), start=1):
        x = torch.where(kind_B1F == i, candidate, x)
    return x * torch.exp(torch.randn(B, 1, F, generator=g)) + 2 * torch.randn(B, 1, F, generator=g)


def sample_columns(
    B: int, n: int, F: int, g: torch.Generator, p_categorical: float = 0.15
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw `B` tables of `n` rows and `F` columns; returns `(x_BnF, xs_BnF)` (see module doc)."""
    x_BnF = _numeric(B, n, F, g)
    xs_BnF = _standardise(x_BnF)
    is_cat_B1F = torch.rand(B, 1, F, generator=g) < p_categorical
    if is_cat_B1F.any():
        n_levels = 10
        # Skewed category frequencies: square a uniform draw before coding.
        codes_BnF = torch.floor(torch.rand(B, n, F, generator=g).pow(2) * n_levels).long()
        levels_BFL = torch.randn(B, F, n_levels, generator=g)
        effect_BnF = torch.gather(levels_BFL.unsqueeze(1).expand(B, n, F, n_levels), 3, codes_BnF.unsqueeze(-1)).squeeze(-1)
        x_BnF = torch.where(is_cat_B1F, codes_BnF.float(), x_BnF)
        xs_BnF = torch.where(is_cat_B1F, _standardise(effect_BnF), xs_BnF)
    return x_BnF, xs_BnF
