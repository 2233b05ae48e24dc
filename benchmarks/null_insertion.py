"""Compositional ablation (docs/operators.md, "Compositional ablation"): which two-block host keeps old tokens fixed?

Three hosts with identical random weights (standard, oa_only, otransformer); `n_null` null
tokens (zero rows) are inserted at random positions and `linf_old_tokens` is the largest change
of the old tokens' states after each block.
"""

import pandas as pd
import torch
from torch import nn

from retrofit.hosts.device import device_label
from retrofit.labels import DEVICE_DOC
from retrofit.ops import OAOnlyBlock, OTransformerBlock, StandardBlock
from retrofit.ops.insertion import insert_rows, keep_mask

HOSTS = {"standard": StandardBlock, "oa_only": OAOnlyBlock, "otransformer": OTransformerBlock}
COLUMN_DOCS = {
    "host": ("label", "the two-block host: `standard`, `oa_only` or `otransformer` (`HOSTS`)"),
    "device": DEVICE_DOC,
    "block": ("integer", "block after which the states are compared (from 1)"),
    "n_null": ("count", "null tokens inserted"),
    "linf_old_tokens": ("hidden-state units", "largest change of an old token's state when the nulls are inserted"),
}
"""Column -> (unit, meaning) of `results/ablation.csv` (`ablation_table`)."""


def build_hosts(
    d_model: int,
    n_heads: int,
    d_ffn: int,
    n_blocks: int,
    bias_std: float,
    generator: torch.Generator,
    tau: float = 1.0,
    eps_den: float = 1e-6,
) -> dict[str, list[nn.Module]]:
    """One block stack per host, all loaded with the same random weights (see `randomise_`)."""
    states = [
        randomise_(StandardBlock(d_model, n_heads, d_ffn), bias_std, generator).state_dict() for _ in range(n_blocks)
    ]
    hosts = {}
    for name, block_type in HOSTS.items():
        kwargs = {} if block_type is StandardBlock else {"tau": tau, "eps_den": eps_den}
        hosts[name] = [block_type(d_model, n_heads, d_ffn, **kwargs) for _ in range(n_blocks)]
        for block, state in zip(hosts[name], states, strict=True):
            block.load_state_dict(state)
    return hosts


def randomise_(module: nn.Module, bias_std: float, generator: torch.Generator) -> nn.Module:
    """In place: Linear weights N(0, 1/fan_in), biases N(0, bias_std^2); LayerNorm weights
    1 + N(0, bias_std^2), biases N(0, bias_std^2) -- a host whose affine parts are not trivial
    (at PyTorch's init a LayerNorm bias is 0 and could not re-activate a null token)."""
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, nn.Linear):
                sub.weight.copy_(torch.randn(sub.weight.shape, generator=generator) / sub.in_features**0.5)
            if isinstance(sub, nn.LayerNorm):
                sub.weight.copy_(1 + bias_std * torch.randn(sub.weight.shape, generator=generator))
            if isinstance(sub, (nn.Linear, nn.LayerNorm)) and sub.bias is not None:
                sub.bias.copy_(bias_std * torch.randn(sub.bias.shape, generator=generator))
    return module


@torch.no_grad()
def states_with_nulls(blocks: list[nn.Module], h_BLE: torch.Tensor, positions: list[int]):
    """Per block: (old states without nulls, old states with nulls, null tokens' states)."""
    keep_L = keep_mask(h_BLE.shape[1], positions)
    h_ins_BLE = insert_rows(h_BLE, keep_L, dim=1)
    states = []
    for block in blocks:
        h_BLE, h_ins_BLE = block(h_BLE), block(h_ins_BLE)
        states.append((h_BLE, h_ins_BLE[:, keep_L], h_ins_BLE[:, ~keep_L]))
    return states


def ablation_table(
    d_model: int,
    n_heads: int,
    d_ffn: int,
    n_blocks: int,
    bias_std: float,
    batch: int,
    n_old: int,
    n_nulls: list[int],
    tau: float,
    eps_den: float,
    seed: int,
    device: str = "cpu",
) -> pd.DataFrame:
    """Rows `host, device, block, n_null, linf_old_tokens` (block counted from 1): weights and states
    drawn on the CPU from `seed` (the same numbers on every device), run on `device`."""
    g = torch.Generator().manual_seed(seed)
    hosts = build_hosts(d_model, n_heads, d_ffn, n_blocks, bias_std, g, tau=tau, eps_den=eps_den)
    hosts = {name: [block.to(device) for block in blocks] for name, blocks in hosts.items()}
    h_BLE = torch.randn(batch, n_old, d_model, generator=g).to(device)
    rows = []
    for n_null in n_nulls:
        positions = torch.randint(0, n_old + 1, (n_null,), generator=g).tolist()
        for host, blocks in hosts.items():
            for block, (old, old_ins, _) in enumerate(states_with_nulls(blocks, h_BLE, positions), start=1):
                rows.append(
                    {
                        "host": host,
                        "device": device_label(device),
                        "block": block,
                        "n_null": n_null,
                        "linf_old_tokens": (old_ins - old).abs().max().item(),
                    }
                )
    return pd.DataFrame(rows)


def ablation_markdown(table: pd.DataFrame) -> str:
    """A host x (block, n_null) table of linf_old_tokens, with the paper's anchor."""
    wide = table.pivot_table(index="host", columns=["block", "n_null"], values="linf_old_tokens", sort=False)
    header = "| host | " + " | ".join(f"block {b}, n_null={n}" for b, n in wide.columns) + " |"
    lines = [header, "|---" * (len(wide.columns) + 1) + "|"]
    lines += [f"| {host} | " + " | ".join(f"{v:.3g}" for v in row) + " |" for host, row in wide.iterrows()]
    return "\n".join(lines) + "\n"
