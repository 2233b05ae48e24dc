"""Function families of the prior. Each maps standardised inputs `xs_bnF` to a raw signal `f_bn`
(standardised afterwards by the caller). All are bounded-cost (no retry loops) and seeded by `g`.
"""

import math
from collections.abc import Callable

import torch

_ACTIVATIONS: tuple[Callable[[torch.Tensor], torch.Tensor], ...] = (
    torch.tanh,
    torch.relu,
    torch.sin,
    torch.nn.functional.silu,
)


def _relevance_mask(b: int, F: int, g: torch.Generator, p_keep: float = 0.8) -> torch.Tensor:
    """`(b, F)` 0/1 mask of relevant features; at least feature 0 stays relevant."""
    keep_bF = (torch.rand(b, F, generator=g) < p_keep).float()
    keep_bF[:, 0] = torch.maximum(keep_bF[:, 0], (keep_bF.sum(1) == 0).float())
    return keep_bF


def linear(xs_bnF: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Sparse random linear map."""
    b, _, F = xs_bnF.shape
    w_bF = torch.randn(b, F, generator=g) * _relevance_mask(b, F, g)
    return torch.einsum("bnf,bf->bn", xs_bnF, w_bF)


def gaussian_process(xs_bnF: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A draw from a GP with an RBF kernel and per-feature lengthscales (some near-irrelevant)."""
    b, n, F = xs_bnF.shape
    log_ls_b1F = torch.empty(b, 1, F).uniform_(math.log(0.4), math.log(3.0), generator=g)
    ls_b1F = torch.exp(log_ls_b1F) * (1 + 4 * (1 - _relevance_mask(b, F, g, 0.7))).unsqueeze(1)
    xl_bnF = xs_bnF / ls_b1F
    K_bnn = torch.exp(-0.5 * torch.cdist(xl_bnF, xl_bnF).pow(2)) + 1e-4 * torch.eye(n)
    L_bnn = torch.linalg.cholesky(K_bnn)
    return (L_bnn @ torch.randn(b, n, 1, generator=g)).squeeze(-1)


def mlp(xs_bnF: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A random 1-2 layer MLP with one of tanh/relu/sin/silu and small internal noise."""
    b, _, F = xs_bnF.shape
    depth = int(torch.randint(1, 3, (1,), generator=g))
    width = int(torch.randint(8, 33, (1,), generator=g))
    act = _ACTIVATIONS[int(torch.randint(0, len(_ACTIVATIONS), (1,), generator=g))]
    h_bnW = xs_bnF * _relevance_mask(b, F, g).unsqueeze(1)
    d_in = F
    for _ in range(depth):
        W = torch.randn(b, d_in, width, generator=g) / math.sqrt(d_in)
        h_bnW = act(h_bnW @ W + torch.randn(b, 1, width, generator=g))
        h_bnW = h_bnW + 0.1 * torch.rand(b, 1, 1, generator=g) * torch.randn(h_bnW.shape, generator=g)
        d_in = width
    return (h_bnW @ (torch.randn(b, d_in, 1, generator=g) / math.sqrt(d_in))).squeeze(-1)


def trees(xs_bnF: torch.Tensor, g: torch.Generator, n_trees: int = 4, depth: int = 3) -> torch.Tensor:
    """A sum of random axis-aligned regression trees (piecewise-constant, tree-like functions)."""
    b, n, F = xs_bnF.shape
    f_bn = torch.zeros(b, n)
    for _ in range(n_trees):
        leaf_bn = torch.zeros(b, n, dtype=torch.long)
        for _ in range(depth):
            feat_b = torch.randint(0, F, (b,), generator=g)
            col_bn = xs_bnF.gather(2, feat_b.view(b, 1, 1).expand(b, n, 1)).squeeze(-1)
            thr_b1 = torch.randn(b, 1, generator=g) * 0.8
            leaf_bn = 2 * leaf_bn + (col_bn > thr_b1).long()
        values_bL = torch.randn(b, 2**depth, generator=g)
        f_bn = f_bn + values_bL.gather(1, leaf_bn)
    return f_bn


def interactions(xs_bnF: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Main effects plus random pairwise products and a saturating nonlinearity."""
    b, _, F = xs_bnF.shape
    main_bn = linear(xs_bnF, g)
    i_b = torch.randint(0, F, (b, 3), generator=g)
    j_b = torch.randint(0, F, (b, 3), generator=g)
    xi = xs_bnF.gather(2, i_b.unsqueeze(1).expand(-1, xs_bnF.shape[1], -1))
    xj = xs_bnF.gather(2, j_b.unsqueeze(1).expand(-1, xs_bnF.shape[1], -1))
    pair_bn = (xi * xj * torch.randn(b, 1, 3, generator=g)).sum(-1)
    return main_bn + torch.tanh(pair_bn)


def near_linear(xs_bnF: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A sparse linear map plus a small random-MLP departure (a fifth to a half of its scale): the
    shape of most real regression tables, where ridge is hard to beat (categorical columns enter as
    their per-level effects, so this is also a linear model with factor effects)."""
    b = xs_bnF.shape[0]
    bend_b1 = torch.empty(b, 1).uniform_(0.2, 0.5, generator=g)
    main_bn, departure_bn = linear(xs_bnF, g), mlp(xs_bnF, g)
    return main_bn / (main_bn.std(1, keepdim=True) + 1e-6) + bend_b1 * departure_bn / (
        departure_bn.std(1, keepdim=True) + 1e-6
    )


FUNCTION_FAMILIES: dict[str, Callable[[torch.Tensor, torch.Generator], torch.Tensor]] = {
    "linear": linear,
    "gp": gaussian_process,
    "mlp": mlp,
    "trees": trees,
    "interactions": interactions,
    "near_linear": near_linear,
}
"""Name -> family; the order fixes the family index recorded in `PriorBatch.family_B`."""
