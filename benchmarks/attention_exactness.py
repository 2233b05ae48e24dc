"""OAttention exactness: each implementation x sink mode x dtype x shape against the float64 reference.

One row per (implementation, eps_mode, dtype, shape, score_std): the L_inf error in absolute units and
in units of eps(dtype) * max|ref|; the largest |output| over null receivers (exactly 0 by
contract); the largest change of the outputs when null sources are inserted, absolute and in
units of eps(dtype) * rowmax|out| (compact: exactly 0 by contract).
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

import pandas as pd
import torch

from benchmarks.tools.attention_inputs import AttentionInputs, random_attention_inputs, with_null_keys
from retrofit.hosts.device import device_label
from retrofit.labels import DEVICE_DOC
from retrofit.ops import EPS_MODES, o_attention, o_attention_materialised, o_attention_reference

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
COLUMN_DOCS = {
    "implementation": ("label", "OAttention implementation: `fused`, `compact` or `materialised`"),
    "device": DEVICE_DOC,
    "eps_mode": ("label", "the sink's mode: `absolute` or `relative`"),
    "dtype": ("label", "dtype of the inputs and the computation"),
    "B": ("count", "batch size"),
    "H": ("count", "attention heads"),
    "Q": ("count", "queries"),
    "K": ("count", "keys"),
    "D": ("count", "head dimension"),
    "score_std": ("dimensionless", "standard deviation of the attention scores the inputs are drawn for"),
    "linf_abs": ("output units", "largest |output − float64 reference|"),
    "max_abs_ref": ("output units", "largest |reference output|"),
    "linf_eps_units": ("eps(dtype) · max|ref|", "linf_abs / (eps(dtype) · max_abs_ref)"),
    "null_receiver_max_abs": ("output units", "largest |output| of a null receiver (0 by contract)"),
    "null_insertion_linf_abs": ("output units", "largest output change when null sources are inserted"),
    "null_insertion_eps_units": (
        "eps(dtype) · rowmax|out|",
        "that change per row in units of eps(dtype) · rowmax|out|",
    ),
}
"""Column -> (unit, meaning) of `results/exactness.csv` (`exactness_table`)."""
IMPLEMENTATIONS: dict[str, Callable[..., torch.Tensor]] = {
    "fused": o_attention,
    "compact": partial(o_attention, compact=True),
    "materialised": o_attention_materialised,
}


@dataclass(frozen=True)
class Shape:
    B: int
    H: int
    Q: int
    K: int
    D: int


def exactness_table(
    shapes: Iterable[Shape],
    score_stds: Iterable[float],
    dtypes: Iterable[str],
    null_fraction: float,
    insert_fraction: float,
    seed: int,
    device: str = "cpu",
) -> pd.DataFrame:
    """All rows for the given grid; inputs are redrawn per (shape, score_std, dtype) from `seed` on
    the CPU (the same numbers on every device) and computed on `device`, the reference too."""
    label = device_label(device)
    rows = []
    for shape in shapes:
        for score_std in score_stds:
            for dtype_name in dtypes:
                g = torch.Generator().manual_seed(seed)
                x = random_attention_inputs(
                    shape.B,
                    shape.H,
                    shape.H,
                    shape.Q,
                    shape.K,
                    shape.D,
                    dtype=DTYPES[dtype_name],
                    score_std=score_std,
                    null_fraction=null_fraction,
                    generator=g,
                )
                positions = torch.randint(0, shape.K + 1, (max(1, int(insert_fraction * shape.K)),), generator=g)
                x_ins = with_null_keys(x, positions.tolist(), scale=1.0, generator=g).to(device)
                x = x.to(device)
                for eps_mode in EPS_MODES:
                    ref = o_attention_reference(*x.args(), eps_mode=eps_mode)
                    for name, impl in IMPLEMENTATIONS.items():
                        figures = measure(partial(impl, eps_mode=eps_mode), x, x_ins, ref)
                        rows.append(
                            {
                                "implementation": name,
                                "device": label,
                                "eps_mode": eps_mode,
                                "dtype": dtype_name,
                                **vars(shape),
                                "score_std": score_std,
                                **figures,
                            }
                        )
    return pd.DataFrame(rows)


def measure(
    impl: Callable[..., torch.Tensor], x: AttentionInputs, x_ins: AttentionInputs, ref: torch.Tensor
) -> dict[str, float]:
    """The exactness figures of one implementation on one input (see the module docstring)."""
    eps = torch.finfo(x.q.dtype).eps
    out = impl(*x.args()).double()
    linf, max_ref = (out - ref).abs().max().item(), ref.abs().max().item()
    change_BHQD = (impl(*x_ins.args()).double() - out).abs()
    rel_change_BHQD = change_BHQD / (eps * out.abs().amax(-1, keepdim=True))
    return {
        "linf_abs": linf,
        "max_abs_ref": max_ref,
        "linf_eps_units": linf / (eps * max_ref),
        "null_receiver_max_abs": _max_or_zero(out.permute(0, 2, 1, 3)[x.p_q == 0].abs()),
        "null_insertion_linf_abs": change_BHQD.max().item(),
        "null_insertion_eps_units": _max_or_zero(rel_change_BHQD[change_BHQD > 0]),
    }


def _max_or_zero(t: torch.Tensor) -> float:
    return t.max().item() if t.numel() else 0.0
