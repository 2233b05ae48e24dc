"""`predict_many`: several fitted o_closed regressors, each on its own table, in few forward passes.

Tables of different sizes share a forward by padding, with no attention mask: the padding is
declared absent (`row_presence`, `column_presence` of `OClosedTabPFNV3.forward`), and an
O-closed model gives every present output what it gives without the padding (up to rounding;
bitwise with `compact`). The stock host has no such guarantee: `experiments/padding_demo.py`
measures how far the same padding moves its predictions.

Batching saves the fixed cost of the forwards it merges and pays for the padded work it adds, so
it pays on small models (the fixed cost dominates) and rarely at TabPFN's real size (the work
dominates). `batched_tables` decides which tables share forwards from a cost model
(`ForwardCost`: the model's multiply-adds per shape plus a fixed cost per forward); the other
tables run their own `predict`. The fixed cost is measured once per model and kept with it
(`ForwardCost.calibrated`), because no constant holds: it is the cost of hundreds of small ops,
microseconds each on an idle CPU, up to milliseconds each on a loaded one whose threads wait
to be scheduled at every op. Given the cost model, the decision is a deterministic function of
the shapes.
"""

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from tabpfn import TabPFNRegressor
from tabpfn.inference import InferenceEngineCachePreprocessing
from tabpfn.preprocessing.clean import clean_data_transform
from tabpfn.preprocessing.datamodel import FeatureModality
from tabpfn.utils import get_autocast_context
from tabpfn.validation import check_input_shape_matches, ensure_compatible_predict_input_sklearn

from retrofit.errors import RetrofitError
from retrofit.tabpfn_internals import (
    decode_batched_dataset,
    maybe_run_gpu_preprocessing,
    prepare_model_inputs,
    translate_batched_logits,
)

MAX_PADDING = 1.5
"""A bucket's padded work (cells, in-context attention pairs) is at most this multiple of its
unpadded work (see `bucket_members`)."""
MAX_CELLS = 4_000_000
"""A bucket holds at most this many padded cells (batch x rows x columns): the memory bound."""
CALIBRATION_SHAPES = ((8, 2, 3), (256, 64, 6))
"""(train rows, test rows, columns) of the two synthetic tables whose forward times calibrate a
model's fixed cost per forward (`ForwardCost.calibrated`): one where the fixed cost is nearly
all, one where the work shows."""
CALIBRATION_ROUNDS = 5
"""Alternating timed forwards per calibration shape (after a warm-up each); each keeps its fastest."""


@dataclass(frozen=True)
class MemberInput:
    """One ensemble member's model input, as tabpfn's engine builds it: `x_RC` (train rows first,
    then test rows), `y_N` its train targets; `pair` and `member` say whose it is."""

    pair: int
    member: int
    x_RC: torch.Tensor
    y_N: torch.Tensor

    @property
    def shape(self) -> tuple[int, int, int]:
        """(train rows, test rows, columns)."""
        N = self.y_N.shape[0]
        return N, self.x_RC.shape[0] - N, self.x_RC.shape[1]


def predict_many(
    pairs: Iterable[tuple[TabPFNRegressor, Any]], *, max_padding: float = MAX_PADDING, max_cells: int = MAX_CELLS
) -> list[np.ndarray]:
    """Mean predictions of every `(regressor, X_test)` pair, as `[r.predict(X) for r, X in pairs]`.

    Every regressor is an o_closed retrofit (`retrofit.retrofit(fitted, "o_closed")`; a fitted
    `retrofit.RetrofitRegressor("o_closed")` counts as its `regressor_`) of a regressor fitted on
    its own table (any numbers of train rows, test rows and features), all on the same host
    checkpoint, variant and device, fitted with fit_mode="fit_preprocessors".
    Each regressor's ensemble members are preprocessed by tabpfn's own pipeline (as its
    `predict` does), then all members are bucketed by size (`bucket_members`), padded with
    absent rows and columns to their bucket's shape, stacked along the batch axis and run
    through one forward per bucket, with no attention mask. Each regressor's outputs are then
    post-processed exactly as its `predict` does (border translation per member, ensemble
    average, bar distribution mean, target scale). Equal to each regressor's own `predict` up to
    rounding (1e-5 of the prediction scale), bitwise with `compact`.
    Memory: one bucket at a time, at most `max_cells` padded cells; activations of the column
    stage are ~ cells x embedding width x 4 bytes times a small constant.
    `pairs` may be any iterable of pairs (a list, a generator); it is read once.
    Raises RetrofitError for `pairs` that is no iterable of pairs (a mapping, a string), an item
    that is not a (regressor, X_test) pair, a regressor that is not o_closed, regressors on
    different checkpoints, variants or devices, or a fit mode without cached preprocessing.
    """
    pairs = _listed(pairs)
    regressors = _check_pairs(pairs)
    pairs = [(regressor, pair[1]) for regressor, pair in zip(regressors, pairs, strict=True)]
    members: list[MemberInput] = []
    for index, (regressor, X) in enumerate(pairs):
        if not getattr(regressor, "is_constant_target_", False):
            members += member_inputs(index, regressor, X)
    cost = ForwardCost.calibrated(regressors[0])
    batched = batched_tables(members, cost, max_padding=max_padding, max_cells=max_cells)
    outputs: dict[tuple[int, int], torch.Tensor] = {}
    for bucket in bucket_members(
        [m for m in members if m.pair in batched], max_padding=max_padding, max_cells=max_cells
    ):
        logits_TBO = _forward_bucket(regressors[bucket[0].pair], bucket)
        for b, item in enumerate(bucket):
            outputs[(item.pair, item.member)] = logits_TBO[: item.shape[1], b]
    results = []
    for index, (regressor, X) in enumerate(pairs):
        if index in batched:
            n_members = len(regressor.executor_.ensemble_members)
            results.append(decode_members(regressor, [outputs[(index, m)] for m in range(n_members)]))
        else:
            results.append(regressor.predict(X))
    return results


@dataclass(frozen=True)
class ForwardCost:
    """Multiply-adds of one forward of an o_closed tabpfn_v3 / v3.5 model, from its own sizes.

    Per element of shape (N train, T test rows, C columns), R = N + T rows, G = ceil(C / feature
    group size) cell groups, K CLS tokens: R G cell tokens through the distribution embedder (its
    parameters, plus attention to its inducing points), R (G + K) tokens through the column
    aggregator (its parameters, plus attention among a row's G + K tokens), R row carriers through
    the in-context blocks (their parameters, plus attention to the N train rows). One forward
    adds `overhead` multiply-add equivalents, whatever its size.
    """

    group_size: int
    cls_tokens: int
    cell_macs: float
    inducing_macs: float
    aggregator_macs: float
    aggregator_width: float
    row_macs: float
    row_width: float
    overhead: float

    @classmethod
    def calibrated(cls, regressor: TabPFNRegressor) -> "ForwardCost":
        """The cost model of the regressor's model with its measured fixed cost, measured on the first
        call and kept on the model (`predict_many_cost`): the seconds of a forward of the first of
        `CALIBRATION_SHAPES`, times the multiply-adds per second between the two shapes' forwards
        (`_calibration_seconds`). If the larger forward is no slower, the fixed cost is all there
        is and is infinite (every bucket of several tables pays)."""
        model = regressor.models_[0]
        cached = getattr(model, "predict_many_cost", None)
        if cached is None:
            cost = cls.of(model, overhead=0.0)
            small, large = _calibration_seconds(regressor)
            extra = cost.work(CALIBRATION_SHAPES[1]) - cost.work(CALIBRATION_SHAPES[0])
            overhead = small * extra / (large - small) if large > small else math.inf
            cached = model.predict_many_cost = replace(cost, overhead=overhead)
        return cached

    @classmethod
    def of(cls, model: torch.nn.Module, overhead: float) -> "ForwardCost":
        """The cost model of `model` (an `OClosedTabPFNV3` or a subclass; its host is `model.base_layer`,
        its readout `model.readout_modules`) with a fixed cost of `overhead` multiply-adds per forward."""
        base = model.base_layer
        embedder, aggregator = base.feature_distribution_embedder, base.column_aggregator
        width = aggregator.embed_dim
        return cls(
            group_size=base.feature_group_size,
            cls_tokens=aggregator.num_cls_tokens,
            cell_macs=_parameters(base.x_embed, base.col_y_encoder, embedder),
            inducing_macs=4 * width * sum(layer.num_inducing_points for layer in embedder.layers),
            aggregator_macs=_parameters(aggregator),
            aggregator_width=2 * width * len(aggregator.blocks),
            row_macs=_parameters(base.icl_y_encoder, *base.icl_blocks, *model.readout_modules),
            row_width=2 * width * aggregator.num_cls_tokens * len(base.icl_blocks),
            overhead=overhead,
        )

    def work(self, shape: tuple[int, int, int]) -> float:
        """Multiply-adds of one element of shape (train rows, test rows, columns), overhead aside."""
        N, T, C = shape
        groups = math.ceil(C / self.group_size)
        tokens = groups + self.cls_tokens
        cells = groups * (self.cell_macs + self.inducing_macs)
        aggregator = tokens * (self.aggregator_macs + self.aggregator_width * tokens)
        return (N + T) * (cells + aggregator + self.row_macs + self.row_width * N)

    def pays(self, members: Sequence[MemberInput]) -> bool:
        """Whether one padded forward of `members` costs less than their tables' own forwards (one
        per table): the fixed cost of the forwards it saves exceeds the padded work it adds."""
        tables = len({m.pair for m in members})
        added = len(members) * self.work(_padded_shape(members)) - sum(self.work(m.shape) for m in members)
        return (tables - 1) * self.overhead > added


def _calibration_seconds(regressor: TabPFNRegressor) -> tuple[float, float]:
    """Seconds of a forward of the regressor's model on a synthetic normal table of each of
    `CALIBRATION_SHAPES` (train rows, test rows, columns): after a warm-up each, the two shapes
    run alternately for `CALIBRATION_ROUNDS` rounds, and each keeps its fastest. Other jobs on
    the machine only ever add time to a forward, so the minimum is the estimate they disturb
    least, and alternating lets a slow phase of the machine hit both shapes alike."""
    generator = torch.Generator().manual_seed(0)
    members = [
        MemberInput(0, 0, torch.randn(N + T, C, generator=generator), torch.randn(N, generator=generator))
        for N, T, C in CALIBRATION_SHAPES
    ]
    seconds: list[list[float]] = [[] for _ in members]
    for member in members:
        _forward_bucket(regressor, [member])
    for _ in range(CALIBRATION_ROUNDS):
        for member, times in zip(members, seconds, strict=True):
            start = time.perf_counter()
            _forward_bucket(regressor, [member])
            times.append(time.perf_counter() - start)
    small, large = (min(times) for times in seconds)
    return small, large


def batched_tables(
    members: Sequence[MemberInput], cost: ForwardCost, *, max_padding: float = MAX_PADDING, max_cells: int = MAX_CELLS
) -> set[int]:
    """The tables (`MemberInput.pair`) whose members `predict_many` runs in padded shared forwards;
    the others run their own predict. Deterministic given `cost` (no timing here): bucket the
    members (`bucket_members`); a bucket pays if its padded forward costs less than its tables'
    own forwards (`ForwardCost.pays`; one that holds a single table saves nothing). From each
    bucket that does not pay, the table of its smallest member (the one padded most) leaves, and
    the rest are bucketed again, until every bucket pays. A table that left is not batched."""
    batched = {m.pair for m in members}
    while True:
        buckets = bucket_members(
            [m for m in members if m.pair in batched], max_padding=max_padding, max_cells=max_cells
        )
        losing = {bucket[-1].pair for bucket in buckets if not cost.pays(bucket)}  # members sorted largest first
        if not losing:
            return batched
        batched -= losing


def member_inputs(pair: int, regressor: TabPFNRegressor, X: Any) -> list[MemberInput]:
    """The model inputs of every ensemble member of `regressor` for test rows `X`, built the way
    its `predict` builds them (input checks, cleaning, each member's fitted preprocessing)."""
    check_input_shape_matches(X, estimator=regressor)
    X = regressor.date_transformer_.transform(X)
    X = regressor.text_transformer_.transform(X)
    X = ensure_compatible_predict_input_sklearn(X, regressor)
    X = clean_data_transform(
        X,
        cat_indices=regressor.inferred_feature_schema_.indices_for(FeatureModality.CATEGORICAL),
        ord_encoder=getattr(regressor, "ordinal_encoder_", None),
        passthrough_inf=regressor.get_inference_config().PASSTHROUGH_INF,
    )
    engine = regressor.executor_
    device = regressor.devices_[0]
    inputs = []
    for index, member in enumerate(engine.ensemble_members):
        x_full, y_train = prepare_model_inputs(
            device, engine.force_inference_dtype, member.X_train, member.transform_X_test(X), member.y_train
        )
        x_full, _ = maybe_run_gpu_preprocessing(
            x_full,
            gpu_preprocessor=member.gpu_preprocessor,
            num_train_rows=member.X_train.shape[0],
            feature_schema=member.feature_schema,
        )
        inputs.append(MemberInput(pair, index, x_full[:, 0], y_train))
    return inputs


def bucket_members(
    members: Sequence[MemberInput], *, max_padding: float = MAX_PADDING, max_cells: int = MAX_CELLS
) -> list[list[MemberInput]]:
    """Members grouped so that padding stays bounded. Two work measures, each at most
    `max_padding` times its unpadded value over the bucket: cells, (train + test rows) x columns
    (the column stage); and attention pairs, (train + test rows) x train rows (the in-context
    stage, quadratic in the table). The padded cells of a bucket are also at most `max_cells`
    (a lone member over it runs alone).

    Greedy over members sorted by size, largest first: a member joins the open bucket if every
    bound still holds, else opens the next one.
    """
    if max_padding < 1:
        raise RetrofitError(f"max_padding must be >= 1 (padded work / real work), got {max_padding}")
    ordered = sorted(members, key=lambda m: (_work(m.shape), m.shape), reverse=True)
    buckets: list[list[MemberInput]] = []
    for member in ordered:
        if buckets:
            candidate = [*buckets[-1], member]
            padded = _work(_padded_shape(candidate), len(candidate))
            real = [sum(w) for w in zip(*(_work(m.shape) for m in candidate), strict=True)]
            if all(p <= max_padding * r for p, r in zip(padded, real, strict=True)) and padded[0] <= max_cells:
                buckets[-1] = candidate
                continue
        buckets.append([member])
    return buckets


def pad_members(bucket: Sequence[MemberInput]) -> dict[str, torch.Tensor]:
    """The bucket as one model input: `x` (R, B, C) with each member's train rows first and its
    test rows from row max-train on, absent rows and columns zero; `y` (N, B); presences
    `row_presence` (B, R) and `column_presence` (B, C)."""
    N, T, C = _padded_shape(bucket)
    reference = bucket[0].x_RC
    x_RBC = reference.new_zeros(N + T, len(bucket), C)
    y_NB = reference.new_zeros(N, len(bucket))
    p_BR = reference.new_zeros(len(bucket), N + T)
    p_BC = reference.new_zeros(len(bucket), C)
    for b, member in enumerate(bucket):
        n, t, c = member.shape
        x_RBC[:n, b, :c] = member.x_RC[:n]
        x_RBC[N : N + t, b, :c] = member.x_RC[n:]
        y_NB[:n, b] = member.y_N
        p_BR[b, :n] = 1
        p_BR[b, N : N + t] = 1
        p_BC[b, :c] = 1
    return {"x": x_RBC, "y": y_NB, "row_presence": p_BR, "column_presence": p_BC}


def _forward_bucket(regressor: TabPFNRegressor, bucket: list[MemberInput]) -> torch.Tensor:
    """Logits (T, B, buckets) of one padded bucket from `regressor`'s model and inference settings
    (every regressor of a `predict_many` call runs the same checkpoint and variant)."""
    inputs = pad_members(bucket)
    with get_autocast_context(regressor.devices_[0], enabled=regressor.use_autocast_), torch.inference_mode():
        return regressor.models_[0](inputs.pop("x"), inputs.pop("y"), **inputs).float()


def decode_members(regressor: TabPFNRegressor, outputs: list[torch.Tensor]) -> np.ndarray:
    """Mean predictions from the logits (T, buckets) of each of `regressor`'s ensemble members, in
    member order: `regressor.predict`'s post-processing (border translation per member, ensemble
    average, temperature and corrections, bar distribution mean, target scale)."""
    borders = regressor.znorm_space_bardist_.borders
    accumulated = None
    for member, output in zip(regressor.executor_.ensemble_members, outputs, strict=True):
        translated = translate_batched_logits(
            regressor, output=output, config=member.config, znorm_borders=borders, std_borders=borders.cpu().numpy()
        )
        accumulated = translated if accumulated is None else accumulated + translated
    return decode_batched_dataset(
        regressor,
        accumulated_logits=accumulated,
        n_estimators=len(outputs),
        raw_space_bardist=regressor.raw_space_bardist_,
        znorm_space_bardist=regressor.znorm_space_bardist_,
        y_mean=regressor.y_train_mean_,
        y_std=regressor.y_train_std_,
        output_type="mean",
        quantiles=[0.5],
    )


def closed_regressor(regressor: Any, what: str) -> TabPFNRegressor:
    """The fitted o_closed TabPFNRegressor in `regressor` (a `RetrofitRegressor` counts as its
    `regressor_`), for `what` (the caller, named in the message). RetrofitError naming the fix for a
    stock or non-closed regressor, and for one fitted with several models or without tabpfn's
    preprocessing cache (`fit_mode='fit_preprocessors'`), whose member inputs cannot be re-run."""
    regressor = getattr(regressor, "regressor_", regressor)
    report = getattr(regressor, "retrofit_report_", None)
    if report is None or not report.variant.closed:
        name = f"a stock {type(regressor).__name__}" if report is None else f"variant {report.variant.name!r}"
        raise RetrofitError(
            f"{what} holds {name}, not an o_closed one: only a model O-closed from its input treats declared-absent "
            "rows, columns or padding as absent. Use retrofit.retrofit(fitted, 'o_closed')."
        )
    engine_ok = isinstance(getattr(regressor, "executor_", None), InferenceEngineCachePreprocessing)
    if not getattr(regressor, "is_constant_target_", False) and not (engine_ok and len(regressor.models_) == 1):
        raise RetrofitError(
            f"{what}: the regressor was fitted with fit_mode={regressor.fit_mode!r} or several models; fit one "
            "model_path with fit_mode='fit_preprocessors' (tabpfn's default)"
        )
    return regressor


def _listed(pairs: Iterable[tuple[TabPFNRegressor, Any]]) -> list[tuple[TabPFNRegressor, Any]]:
    """`pairs` read into a list; RetrofitError for a non-iterable, a mapping or a string."""
    if not isinstance(pairs, Iterable) or isinstance(pairs, Mapping | str | bytes):
        raise RetrofitError(
            f"predict_many takes an iterable of (regressor, X_test) pairs, got a {type(pairs).__name__}; "
            "pass [(regressor, X_test), ...]"
        )
    return list(pairs)


def _check_pairs(pairs: Sequence[tuple[TabPFNRegressor, Any]]) -> list[TabPFNRegressor]:
    """The regressors of `pairs` (a `RetrofitRegressor` stands for its `regressor_`); RetrofitError
    unless every item is a (regressor, X_test) pair and all regressors can share one model."""
    if not pairs:
        raise RetrofitError("predict_many needs at least one (regressor, X_test) pair")
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise RetrofitError(
                f"predict_many: item {index} is a {type(pair).__name__}, not a (regressor, X_test) pair; "
                "pass [(regressor, X_test), ...]"
            )
    regressors = [getattr(pair[0], "regressor_", pair[0]) for pair in pairs]
    for index, regressor in enumerate(regressors):
        if not isinstance(regressor, TabPFNRegressor):
            raise RetrofitError(
                f"predict_many: pair {index} starts with a {type(regressor).__name__}, not a fitted regressor; "
                "each pair is (regressor, X_test), the regressor first"
            )
        closed_regressor(regressor, f"predict_many: pair {index}")
    for label, key in (
        ("checkpoints", lambda r: str(r.model_path)),
        ("variants", lambda r: r.retrofit_report_.variant),
        ("devices", lambda r: tuple(str(d) for d in r.devices_)),
        ("inference precisions", lambda r: (str(r.inference_precision), r.use_autocast_)),
    ):
        values = [key(r) for r in regressors]
        if len(set(values)) > 1:
            raise RetrofitError(
                f"predict_many: the regressors are on different {label} ({sorted(set(map(str, values)))}); "
                "one forward runs one model, so call predict_many once per group"
            )
    return regressors


def _work(shape: tuple[int, int, int], count: int = 1) -> tuple[int, int]:
    """(cells, attention pairs) of `count` members of shape (train rows, test rows, columns)."""
    N, T, C = shape
    return count * (N + T) * C, count * (N + T) * N


def _parameters(*modules: torch.nn.Module) -> float:
    """Parameters of `modules`: the multiply-adds one token spends in them."""
    return float(sum(p.numel() for module in modules for p in module.parameters()))


def _padded_shape(bucket: Sequence[MemberInput]) -> tuple[int, int, int]:
    """The (train rows, test rows, columns) every member of `bucket` is padded to."""
    return tuple(max(m.shape[i] for m in bucket) for i in range(3))
