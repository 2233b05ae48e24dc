"""Two-sublayer post-norm transformer blocks (TabPFN's layout) for the compositional ablation.

    h = norm1(h + out_proj(attention(qkv(h))));  h = norm2(h + ffn(h))

The three blocks share one parameter layout (same `state_dict` keys), so one set of weights can
be loaded into each and only the operators differ:
- `StandardBlock`: softmax attention, biased FFN, affine LayerNorm;
- `OAOnlyBlock`: OAttention inside an otherwise standard block;
- `OTransformerBlock`: OAttention (compact) + presence-gated out-projection bias + OFFN + ONorm.
The heads split the width: D = E / H.
"""

import torch
import torch.nn.functional as F
from torch import nn

from retrofit.ops.attention import o_attention
from retrofit.ops.closure import o_ffn, o_linear, o_norm
from retrofit.ops.presence import presence


class _PostNormBlock(nn.Module):
    """The shared block; `o_attention` swaps the attention, `o_local` the per-token maps."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ffn: int,
        *,
        o_attention: bool,
        o_local: bool,
        tau: float = 1.0,
        eps_den: float = 1e-6,
    ):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}.")
        self.n_heads, self.tau, self.eps_den = n_heads, tau, eps_den
        self.use_o_attention, self.use_o_local = o_attention, o_local
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ffn), nn.GELU(), nn.Linear(d_ffn, d_model))
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, h_BLE: torch.Tensor) -> torch.Tensor:
        p_BL = presence(h_BLE, self.tau)
        h_BLE = self._norm(self.norm1, h_BLE + self._attend(h_BLE, p_BL))
        p_BL = presence(h_BLE, self.tau)
        ffn_out_BLE = o_ffn(h_BLE, p_BL, self.ffn) if self.use_o_local else h_BLE + self.ffn(h_BLE)
        return self._norm(self.norm2, ffn_out_BLE)

    def _attend(self, h_BLE: torch.Tensor, p_BL: torch.Tensor) -> torch.Tensor:
        B, L, E = h_BLE.shape
        q_BHLD, k_BHLD, v_BHLD = (
            t.view(B, L, self.n_heads, E // self.n_heads).transpose(1, 2) for t in self.qkv(h_BLE).chunk(3, dim=-1)
        )
        if self.use_o_attention:
            a_BHLD = o_attention(q_BHLD, k_BHLD, v_BHLD, p_BL, p_BL, eps_den=self.eps_den, compact=self.use_o_local)
        else:
            a_BHLD = F.scaled_dot_product_attention(q_BHLD, k_BHLD, v_BHLD)
        a_BLE = a_BHLD.transpose(1, 2).reshape(B, L, E)
        return o_linear(a_BLE, p_BL, self.out_proj) if self.use_o_local else self.out_proj(a_BLE)

    def _norm(self, norm: nn.LayerNorm, x_BLE: torch.Tensor) -> torch.Tensor:
        return o_norm(x_BLE, presence(x_BLE, self.tau), norm) if self.use_o_local else norm(x_BLE)


class StandardBlock(_PostNormBlock):
    """Softmax attention, biased FFN, affine LayerNorm: a null token is an ordinary token."""

    def __init__(self, d_model: int, n_heads: int, d_ffn: int):
        super().__init__(d_model, n_heads, d_ffn, o_attention=False, o_local=False)


class OAOnlyBlock(_PostNormBlock):
    """OAttention in an otherwise standard block: the FFN and the LayerNorm bias re-activate 0."""

    def __init__(self, d_model: int, n_heads: int, d_ffn: int, *, tau: float = 1.0, eps_den: float = 1e-6):
        super().__init__(d_model, n_heads, d_ffn, o_attention=True, o_local=False, tau=tau, eps_den=eps_den)


class OTransformerBlock(_PostNormBlock):
    """O-closed block: inserting null tokens leaves old tokens unchanged and keeps nulls at 0.

    OAttention runs with `compact=True`, so the attention outputs of old tokens are bitwise
    unchanged; the per-token maps (projections, OFFN, ONorm) act row by row.
    """

    def __init__(self, d_model: int, n_heads: int, d_ffn: int, *, tau: float = 1.0, eps_den: float = 1e-6):
        super().__init__(d_model, n_heads, d_ffn, o_attention=True, o_local=True, tau=tau, eps_den=eps_den)
