"""Random OAttention inputs with controlled score scale and null fractions."""

import math
from dataclasses import dataclass

import torch

from retrofit.ops.insertion import insert_rows, keep_mask


@dataclass(frozen=True)
class AttentionInputs:
    q: torch.Tensor  # (B, H, Q, D)
    k: torch.Tensor  # (B, G, K, D)
    v: torch.Tensor  # (B, G, K, D)
    p_q: torch.Tensor  # (B, Q)
    p_k: torch.Tensor  # (B, K)

    def args(self) -> tuple[torch.Tensor, ...]:
        """(q, k, v, p_q, p_k): the positional arguments of `o_attention`."""
        return self.q, self.k, self.v, self.p_q, self.p_k

    def to(self, device: str | torch.device) -> "AttentionInputs":
        """These inputs on `device` (drawn on the CPU from a seeded generator, the same numbers on every device)."""
        return AttentionInputs(*(t.to(device) for t in self.args()))


def random_attention_inputs(
    B: int,
    H: int,
    G: int,
    Q: int,
    K: int,
    D: int,
    *,
    dtype: torch.dtype,
    score_std: float,
    null_fraction: float,
    generator: torch.Generator,
) -> AttentionInputs:
    """q, k ~ N(0, score_std) per entry, so scores q.k/sqrt(D) have std `score_std`; v ~ N(0, 1).

    Presences are U(0.05, 1), each set to exactly 0 with probability `null_fraction`.
    q, k, v are drawn in float32 and rounded to `dtype`; presences stay float32.
    """
    sigma = math.sqrt(score_std)

    def draw_presence(L):
        p_BL = torch.rand(B, L, generator=generator) * 0.95 + 0.05
        return torch.where(torch.rand(B, L, generator=generator) < null_fraction, 0.0, p_BL)

    return AttentionInputs(
        q=(sigma * torch.randn(B, H, Q, D, generator=generator)).to(dtype),
        k=(sigma * torch.randn(B, G, K, D, generator=generator)).to(dtype),
        v=torch.randn(B, G, K, D, generator=generator).to(dtype),
        p_q=draw_presence(Q),
        p_k=draw_presence(K),
    )


def with_null_keys(
    x: AttentionInputs, positions: list[int], *, scale: float, generator: torch.Generator
) -> AttentionInputs:
    """x with null sources inserted before the given key indices (see `keep_mask`).

    Inserted keys have p = 0 and k, v ~ N(0, scale^2): a null token's projections need not be 0.
    """
    keep_K = keep_mask(x.k.shape[2], positions)
    B, G, _, D = x.k.shape

    def spread(t_BGKD):
        noise_BGKD = (scale * torch.randn(B, G, keep_K.numel(), D, generator=generator)).to(t_BGKD.dtype)
        return torch.where(keep_K[:, None], insert_rows(t_BGKD, keep_K, dim=2), noise_BGKD)

    return AttentionInputs(x.q, spread(x.k), spread(x.v), x.p_q, insert_rows(x.p_k, keep_K, dim=1))
