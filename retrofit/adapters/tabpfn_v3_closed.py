"""`OClosedTabPFNV3`: a whole tabpfn_v3 model in which every stage that mixes rows or columns
follows the O law, from the raw input to the readout (the `o_closed` variant).

Absence is declared at the model's input, where tabpfn's preprocessing (per ensemble member,
on the CPU, before the model) has already run: `forward(x, y, ..., row_presence=p_BR,
column_presence=p_BC)`, x (R, B, C) with the N = len(y) train rows first, p 1 = present,
0 = absent (structural; nothing in between). An absent row or column is a null token from its
first carrier on: its cells (whatever they hold; padding uses zeros) carry no mass in any
statistic, get exactly-0 carriers, and every other output is unchanged up to rounding (bitwise
with `compact`). Without presence everything is present and the model computes the stock
dataflow with O operators (the `full_o` in-context stage plus the closed stages below).
Stages, each on the host's own submodules:
  input       presence-weighted imputation and standardisation, rank-based feature grouping
              (`tabpfn_v3_input`);
  embedding   `x_embed` and the column label embedding injected with OInject (their biases
              would otherwise turn an absent cell into a non-zero carrier);
  columns     the distribution embedder and the column aggregator with OAttention, OFFN,
              presence-mass softmax scaling, OInject of the CLS tokens, rank RoPE
              (`tabpfn_v3_columns`);
  labels      the in-context label embedding injected with OInject;
  in-context  the host's `icl_blocks`, wrapped by `OICLBlockV3` (hidden-carrier presence);
  readout     `output_norm` (RMSNorm, 0 -> 0) and `output_projection` per test row, gated by
              the row's presence: an absent test row reads out exactly 0 logits (with `compact`,
              the projection runs per batch element on its present test rows alone).
With tabpfn's memory saving on (forced or automatic: `performance_options.save_peak_memory_factor`)
the distribution embedder, the column aggregator and the in-context blocks run in the chunks
tabpfn runs the stock model in (`retrofit.adapters.chunks`); tabpfn's row chunking of the stages
before the blocks (`inference_chunk_cells`) and its KV cache are not used. Regression hosts only.
"""

from typing import Any, ClassVar

import torch
from torch import nn

from retrofit.adapters.attention import AttentionSettings
from retrofit.adapters.block import KV_CACHE_REFUSAL
from retrofit.adapters.closure import OClosedModel
from retrofit.adapters.tabpfn_v3_columns import o_column_aggregator, o_distribution_embedder
from retrofit.adapters.tabpfn_v3_input import (
    gathered_groups,
    o_column_groups,
    o_standardised_cells,
    o_targets,
    present_cells,
)
from retrofit.errors import RetrofitError
from retrofit.ops import o_inject
from retrofit.tabpfn_internals import embed_col_y, embed_icl_y, nan_safe_output

V2_REFUSAL = (
    "the tabpfn_v2 family cannot be O-closed at its input: its encoders standardise every feature over "
    "the train rows inside the encoder pipeline (an absent row would shift those statistics) and every "
    "block's attention between features mixes the columns of a row with a stock softmax (an absent column "
    "would dilute it); neither takes a presence. Use a tabpfn_v3 or tabpfn_v3_5 host for o_closed (tiny_v3, "
    "tiny_v3_5), or full_o (in-context stage only) on this one."
)


class OClosedTabPFNV3(OClosedModel):
    """A tabpfn_v3 regression model O-closed from input to readout (see the module docstring).

    `attention`: the OAttention settings of the column stage (the in-context blocks carry their
    own, from the same variant). A subclass for a sibling architecture says what differs by data
    (`required`, `closed_stages`, `qk_norm`, `task`) and by the hooks `cell_channels` (the per-cell
    inputs of the embedding) and `head` (the readout's projection of a test carrier).
    """

    qk_norm: ClassVar[bool] = False
    """Whether the column stage's attentions normalise queries and keys per head (`q_norm`, `k_norm`)."""

    task: ClassVar[dict[str, str]] = {}
    """Keyword arguments the host's label embeddings take to embed regression targets."""

    required: ClassVar[tuple[str, ...]] = (
        "x_embed",
        "col_y_encoder",
        "feature_distribution_embedder",
        "column_aggregator",
        "icl_y_encoder",
        "icl_blocks",
        "output_norm",
        "output_projection",
        "feature_group_size",
        "use_nan_indicators",
    )

    closed_stages: ClassVar[tuple[str, ...]] = (
        "x_embed",
        "col_y_encoder",
        "feature_distribution_embedder",
        "column_aggregator",
        "icl_y_encoder",
        "output_norm",
        "output_projection",
    )

    def __init__(self, base_layer: nn.Module, *, attention: AttentionSettings):
        super().__init__(base_layer)
        missing = [name for name in self.required if not hasattr(base_layer, name)]
        if missing:
            raise RetrofitError(
                f"{type(self).__name__} cannot wrap {type(base_layer).__name__}: it lacks {missing}; this tabpfn "
                "version's layout differs from the one the closure reimplements."
            )
        if getattr(base_layer, "task_type", "regression") != "regression":  # a multitask host has none
            raise RetrofitError(
                f"o_closed supports regression hosts only (this one is {getattr(base_layer, 'task_type', None)!r}); "
                "the many-class decoder mixes train rows outside the closure."
            )
        self.attention = attention

    def forward(
        self,
        x: torch.Tensor | dict[str, torch.Tensor],
        y: torch.Tensor | dict[str, torch.Tensor],
        *,
        only_return_standard_out: bool = True,
        categorical_inds: list[list[int]] | None = None,
        performance_options: Any = None,
        task_type: str | None = None,
        kv_cache: Any = None,
        return_kv_cache: bool = False,
        x_is_test_only: bool = False,
        row_presence: torch.Tensor | None = None,
        column_presence: torch.Tensor | None = None,
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The host's forward with absence: logits (T, B, buckets) of the test rows.

        `x` (R, B, C) raw (preprocessed) cells, `y` (N,) or (N, B) train targets, `row_presence`
        (B, R), `column_presence` (B, C): 1 present, 0 absent (None: all present). An absent test
        row gets logits exactly 0. `categorical_inds` is accepted and unused, as by the host;
        `task_type` (a multitask host's head) must be regression when given.
        """
        if kv_cache is not None or return_kv_cache or x_is_test_only:
            raise RuntimeError(KV_CACHE_REFUSAL)
        if task_type not in (None, "regression"):
            raise RetrofitError(f"o_closed runs regression heads only, got task_type={task_type!r}")
        x_RBC = x["main"] if isinstance(x, dict) else x
        y = y["main"] if isinstance(y, dict) else y
        y = y.squeeze(-1) if y.dim() == 3 else y
        R, B, C = x_RBC.shape
        N = y.shape[0]
        if not 0 < N < R:
            raise RetrofitError(f"o_closed needs 1..{R - 1} train rows before the test rows; got {N} train of {R} rows")
        p_BR = _structural(row_presence, (B, R), "row_presence", x_RBC)
        p_BC = _structural(column_presence, (B, C), "column_presence", x_RBC)
        y_BN = o_targets(y, p_BR[:, :N])
        factor = getattr(performance_options, "save_peak_memory_factor", None)
        x_BRCE = self.column_tokens(x_RBC, y_BN, p_BR, p_BC, save_peak_memory_factor=factor)
        return self.forward_tokens(x_BRCE, y_BN, p_BR, p_BC, performance_options, only_return_standard_out)

    def column_tokens(
        self,
        x_RBC: torch.Tensor,
        y_BN: torch.Tensor,
        p_BR: torch.Tensor,
        p_BC: torch.Tensor,
        groups_BUG: torch.Tensor | None = None,
        *,
        save_peak_memory_factor: int | None = None,
    ) -> torch.Tensor:
        """The per-column stage, O-closed: tokens (B, R, U, E) before the column aggregator.

        The cells are standardised over their column's present train rows, token u groups the
        cells of the columns `groups_BUG[:, u]` (default: `o_column_groups(p_BC)`, U = C, each
        column with the present columns 2^i places to its right), is embedded with the train
        labels injected, then runs the distribution embedder, which attends within the token's
        rows only. So a token depends on nothing but its group's columns' cells, the row presence
        and `y_BN` (the train targets, `o_targets`): given its group it is the same for every
        column presence. Explicit `groups_BUG` (all of whose columns must be present) give
        tokens that are all present; by default an absent column's token is 0.
        `save_peak_memory_factor`: the distribution embedder in tabpfn's memory-saving chunks."""
        base = self.base_layer
        N = y_BN.shape[1]
        p_BRC = present_cells(p_BR, p_BC)
        channels = self.cell_channels(x_RBC.transpose(0, 1), p_BR, p_BC, N)
        if groups_BUG is None:
            groups_BUG, p_BRU = o_column_groups(p_BC, base.feature_group_size), p_BRC
        else:
            p_BRU = p_BR[:, :, None].expand(*p_BR.shape, groups_BUG.shape[1])
        grouped_BRUG = torch.cat([gathered_groups(cells_BRC, groups_BUG) for cells_BRC in channels], -1)
        x_BRUE = o_inject(base.x_embed(grouped_BRUG), p_BRU)
        label_BN1E = embed_col_y(base, y_BN, **self.task)[:, :, None, :]
        x_BRUE = torch.cat([x_BRUE[:, :N] + o_inject(label_BN1E, p_BRU[:, :N]), x_BRUE[:, N:]], dim=1)
        embedder = base.feature_distribution_embedder
        return o_distribution_embedder(
            embedder, x_BRUE, p_BRU, N, self.attention, self.qk_norm, save_peak_memory_factor
        )

    def cell_channels(
        self, x_BRC: torch.Tensor, p_BR: torch.Tensor, p_BC: torch.Tensor, num_train: int
    ) -> list[torch.Tensor]:
        """The per-cell inputs (each (B, R, C)) whose groups the cell embedder reads, in its order:
        the standardised cells and, if the host uses them, the NaN/inf indicators
        (`o_standardised_cells`); absent cells 0."""
        cells_BRC, indicator_BRC = o_standardised_cells(x_BRC, present_cells(p_BR, p_BC), num_train)
        return [cells_BRC, indicator_BRC] if self.base_layer.use_nan_indicators else [cells_BRC]

    def column_groups(self, p_BC: torch.Tensor) -> torch.Tensor:
        """(B, C, G) the columns whose cells form each column's token under column presence `p_BC`
        (`o_column_groups`; an absent column's entries are arbitrary)."""
        return o_column_groups(p_BC, self.base_layer.feature_group_size)

    def forward_tokens(
        self,
        x_BRCE: torch.Tensor,
        y_BN: torch.Tensor,
        p_BR: torch.Tensor,
        p_BC: torch.Tensor,
        performance_options: Any = None,
        only_return_standard_out: bool = True,
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The rest of `forward` from the column tokens (`column_tokens`, U = C): the column
        aggregation, the in-context label embedding on the train rows, the in-context blocks and
        the readout; logits (T, B, buckets)."""
        base = self.base_layer
        N = y_BN.shape[1]
        aggregator = base.column_aggregator
        save_peak_memory_factor = getattr(performance_options, "save_peak_memory_factor", None)
        x_BRD = o_column_aggregator(
            aggregator, x_BRCE, p_BR, p_BC, self.attention, self.qk_norm, save_peak_memory_factor
        ).flatten(-2)
        label_BND = o_inject(embed_icl_y(base, y_BN, **self.task), p_BR[:, :N])
        x_BRD = torch.cat([x_BRD[:, :N] + label_BND, x_BRD[:, N:]], dim=1)
        for block in base.icl_blocks:
            x_BRD, _ = block(x_BRD, N, save_peak_memory_factor)
        return self._readout(base.output_norm(x_BRD), p_BR, N, only_return_standard_out)

    def _readout(
        self, x_BRD: torch.Tensor, p_BR: torch.Tensor, N: int, only_return_standard_out: bool
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The test rows' logits (T, B, buckets) from the normed carriers, absent test rows exactly 0;
        with `only_return_standard_out=False` also the test and train embeddings, as the host returns."""
        base = self.base_layer
        test_TBD = x_BRD[:, N:].transpose(0, 1).contiguous()  # a strided matmul rounds by batch layout
        p_TB = p_BR[:, N:].transpose(0, 1)
        out_TBO = self._compact_head(test_TBD, p_TB) if self.attention.compact else o_inject(self.head(test_TBD), p_TB)
        if nan_safe_output(base):
            out_TBO = torch.nan_to_num(out_TBO, nan=0.0)
        if only_return_standard_out:
            return out_TBO
        return {"standard": out_TBO, "test_embeddings": test_TBD, "train_embeddings": x_BRD[:, :N].transpose(0, 1)}

    def _compact_head(self, test_TBD: torch.Tensor, p_TB: torch.Tensor) -> torch.Tensor:
        """`head` run per batch element on its present test rows alone, absent rows exactly 0: a CPU
        matmul may round a row differently with another number of rows beside it, so with
        `compact` an element's logits do not depend on its batch mates or its padding."""
        T, B, _ = test_TBD.shape
        present = [p_TB[:, b] > 0 for b in range(B)]
        logits = [self.head(test_TBD[rows_T, b]) for b, rows_T in enumerate(present)]
        out_TBO = test_TBD.new_zeros(T, B, logits[0].shape[-1])
        for b, (rows_T, logits_tO) in enumerate(zip(present, logits, strict=True)):
            out_TBO[rows_T, b] = logits_tO
        return out_TBO

    def head(self, test_TBD: torch.Tensor) -> torch.Tensor:
        """The regression logits (T, B, buckets) of normed test carriers: the host's `output_projection`
        (its bias is gated by the caller)."""
        return self.base_layer.output_projection(test_TBD)

    @property
    def readout_modules(self) -> tuple[nn.Module, ...]:
        """The host modules a test carrier passes after the in-context blocks (`output_norm`, then `head`'s)."""
        return self.base_layer.output_norm, self.base_layer.output_projection


def _structural(p: torch.Tensor | None, shape: tuple[int, int], name: str, like: torch.Tensor) -> torch.Tensor:
    """The presence `p` (default: all present) in `like`'s dtype; RetrofitError unless shape
    `shape` with every entry 0 or 1."""
    if p is None:
        return like.new_ones(shape)
    p = torch.as_tensor(p, device=like.device)
    if tuple(p.shape) != shape or not bool(((p == 0) | (p == 1)).all()):
        raise RetrofitError(
            f"{name} must be a {shape} tensor of 0 (absent) and 1 (present), got shape {tuple(p.shape)}"
            f"{'' if tuple(p.shape) != shape else ' with other values'}; presence at the input is structural."
        )
    return p.to(like.dtype)
