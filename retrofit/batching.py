"""`predict_many`: several fitted o_closed regressors, each on its own table, in few forward passes.

Tables of different sizes share a forward by padding, with no attention mask: the padding is
declared absent (`row_presence`, `column_presence` of `OClosedTabPFNV3.forward`), and an
O-closed model gives every present output what it gives without the padding (up to rounding;
bitwise with `compact`). The stock host has no such guarantee: `experiments/padding_demo.py`
measures how far the same padding moves its predictions.

Shared forwards are opt-in: by default (`max_padding=None`) every table runs its own `predict`,
what a loop does, because on the CPUs measured merging tables was slower at the median (the 18
tiny_v3 tables with `max_padding=1.5`, `make bench-batch` -> results/bench_batch.csv; tabpfn_v3 /
v3.5 at default size, `make scale-check` -> results/scale.csv).
Given a `max_padding`, which tables share forwards is a function of their shapes and the model's
embedding width alone (`shared_buckets`), never of a timing, so equal calls batch alike on every
machine. Two bounds make the rule: the padded work of a bucket is at most `max_padding` times its
real work (what batching may cost; 1 shares forwards only between equal shapes), and its padded
cells x the embedding width fit `MAX_ACTIVATION_BYTES` (what it may hold in memory, `cell_limit`).
What merging saves, the fixed cost of the forwards it merges, depends on the hardware (measure it
with `python -m retrofit bench_batch max_padding=2 output=outputs/bench_batch.csv`).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import torch
from tabpfn import TabPFNRegressor
from tabpfn.errors import TabPFNValidationError
from tabpfn.inference import InferenceEngineCachePreprocessing
from tabpfn.preprocessing.clean import clean_data_transform
from tabpfn.preprocessing.datamodel import FeatureModality
from tabpfn.utils import get_autocast_context
from tabpfn.validation import check_input_shape_matches, ensure_compatible_predict_input_sklearn

from retrofit.bounds import check_max_cells, check_total_work
from retrofit.data.tabpfn_input import check_columns
from retrofit.errors import RetrofitError, single_line
from retrofit.tabpfn_internals import (
    decode_batched_dataset,
    maybe_run_gpu_preprocessing,
    prepare_model_inputs,
    translate_batched_logits,
)

MAX_PADDING = 1.5
"""The bound the benchmarks measure shared forwards with, and `bucket_members`' default: a
bucket's padded work (cells, in-context attention pairs) is at most this multiple of its
unpadded work."""
MAX_ACTIVATION_BYTES = 512 * 2**20
"""The memory bound: a bucket's padded cells x the model's embedding width x 4 bytes (one float32
activation holding a token per cell) stays within this (`cell_limit`). Inference keeps no
activation across blocks, so the peak is a small multiple of it, whatever the depth."""


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
    pairs: Iterable[tuple[TabPFNRegressor, Any]], *, max_padding: float | None = None, max_cells: int | None = None
) -> list[np.ndarray]:
    """Mean predictions of every `(regressor, X_test)` pair, as `[r.predict(X) for r, X in pairs]`.

    Every regressor is an o_closed retrofit (`retrofit.retrofit(fitted, "o_closed")`; a fitted
    `retrofit.RetrofitRegressor("o_closed")` counts as its `regressor_`) of a regressor fitted on
    its own table (any numbers of train rows, test rows and features), all on the same host
    checkpoint, variant and device, fitted with fit_mode="fit_preprocessors".
    `max_padding=None` (the default): each table runs its own `predict` (bitwise a loop; see the
    module docstring for why). Given a number, each regressor's ensemble members are preprocessed
    by tabpfn's own pipeline (as its `predict` does), then bucketed by size (`shared_buckets`:
    padded work at most `max_padding` times the real work, at most `max_cells` padded cells per
    bucket, by default `cell_limit`), padded with absent rows and columns to their bucket's shape,
    stacked along the batch axis and run through one forward per bucket, with no attention mask.
    Each such regressor's outputs are then post-processed exactly as its `predict` does (border
    translation per member, ensemble average, bar distribution mean, target scale): equal to its
    own `predict` up to rounding (1e-5 of the prediction scale), bitwise with `compact`. A table
    sharing no bucket with another runs its own `predict` (bitwise). The decision depends on the
    shapes and the model alone. `pairs` may be any iterable of pairs (a list, a generator), read once.
    Raises RetrofitError for `pairs` that is no iterable of pairs (a mapping, a string), an item
    that is not a (regressor, X_test) pair, a regressor that is not o_closed, regressors on
    different checkpoints, variants or devices, a fit mode without cached preprocessing,
    `max_padding` that is not a finite number >= 1, `max_cells` that is not an int >= 1,
    `max_cells` without `max_padding`, or tables over the work bound (`check_total_work`), before any runs.
    """
    pairs = _listed(pairs)
    regressors = _check_pairs(pairs)
    pairs = [(regressor, pair[1]) for regressor, pair in zip(regressors, pairs, strict=True)]
    sizes = [(r.n_train_samples_, len(X), r.n_features_in_) for r, X in pairs if hasattr(X, "__len__")]
    check_total_work([(n, n + t, c) for n, t, c in sizes], "predict_many")  # fit_work's rows: fitted and test
    if max_padding is None:
        if max_cells is not None:
            raise RetrofitError("max_cells bounds shared forwards, which need a max_padding (e.g. max_padding=1.5)")
        return [regressor.predict(X) for regressor, X in pairs]
    limit = cell_limit(regressors[0]) if max_cells is None else max_cells
    check_bounds(max_padding, limit)
    members: list[MemberInput] = []
    for index, (regressor, X) in enumerate(pairs):
        if not getattr(regressor, "is_constant_target_", False):
            members += member_inputs(index, regressor, X, f"predict_many: X of pair {index}")
    outputs: dict[tuple[int, int], torch.Tensor] = {}
    for bucket in shared_buckets(members, max_padding=max_padding, max_cells=limit):
        logits_TBO = _forward_bucket(regressors[bucket[0].pair], bucket)
        for b, item in enumerate(bucket):
            outputs[(item.pair, item.member)] = logits_TBO[: item.shape[1], b]
    results = []
    for index, (regressor, X) in enumerate(pairs):
        if (index, 0) in outputs:
            n_members = len(regressor.executor_.ensemble_members)
            results.append(decode_members(regressor, [outputs[(index, m)] for m in range(n_members)]))
        else:
            results.append(regressor.predict(X))
    return results


def cell_limit(regressor: TabPFNRegressor) -> int:
    """The most padded cells one bucket of `regressor`'s model may hold: `MAX_ACTIVATION_BYTES`
    over 4 bytes times the model's embedding width (its column aggregator's, tabpfn_v3 / v3.5)."""
    return MAX_ACTIVATION_BYTES // (4 * regressor.models_[0].column_aggregator.embed_dim)


def shared_buckets(
    members: Sequence[MemberInput], *, max_padding: float = MAX_PADDING, max_cells: int
) -> list[list[MemberInput]]:
    """The buckets `predict_many` runs as padded forwards: those of `bucket_members` that hold a
    member of a table sharing some bucket with another table. A table none of whose members
    shares a bucket saves no forward by padding; it is left out (it runs its own `predict`).
    Given the members in one order, a function of their shapes and the bounds alone."""
    buckets = bucket_members(members, max_padding=max_padding, max_cells=max_cells)
    shared = {m.pair for bucket in buckets if len({m.pair for m in bucket}) > 1 for m in bucket}
    return [bucket for bucket in buckets if bucket[0].pair in shared]


def member_inputs(pair: int, regressor: TabPFNRegressor, X: Any, what: str = "X") -> list[MemberInput]:
    """The model inputs of every ensemble member of `regressor` for test rows `X`, built the way
    its `predict` builds them (input checks, cleaning, each member's fitted preprocessing); an `X`
    its `predict` refuses is RetrofitError "<what>: ..." (see `PatchedTabPFNRegressor.predict`)."""
    config = regressor.get_inference_config()
    check_columns(X, what, transform_dates=config.TRANSFORM_DATES, passthrough_inf=config.PASSTHROUGH_INF)
    try:
        check_input_shape_matches(X, estimator=regressor)
        X = regressor.date_transformer_.transform(X)
        X = regressor.text_transformer_.transform(X)
        X = ensure_compatible_predict_input_sklearn(X, regressor)
    except TabPFNValidationError as err:
        raise RetrofitError(f"{what}: {single_line(str(err))}") from None
    X = clean_data_transform(
        X,
        cat_indices=regressor.inferred_feature_schema_.indices_for(FeatureModality.CATEGORICAL),
        ord_encoder=getattr(regressor, "ordinal_encoder_", None),
        passthrough_inf=config.PASSTHROUGH_INF,
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
    members: Sequence[MemberInput], *, max_padding: float = MAX_PADDING, max_cells: int
) -> list[list[MemberInput]]:
    """Members grouped so that padding stays bounded. Two work measures, each at most
    `max_padding` times its unpadded value over the bucket: cells, (train + test rows) x columns
    (the column stage); and attention pairs, (train + test rows) x train rows (the in-context
    stage, quadratic in the table). The padded cells of a bucket are also at most `max_cells`
    (a lone member over it runs alone).

    Greedy over members sorted by size, largest first: a member joins the open bucket if every
    bound still holds, else opens the next one.
    """
    check_bounds(max_padding, max_cells)
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


def check_bounds(max_padding: Any, max_cells: Any) -> None:
    """RetrofitError unless `max_padding` is a finite number >= 1 and `max_cells` an int >= 1 (one
    line each, naming the fix)."""
    if isinstance(max_padding, bool) or not isinstance(max_padding, Real) or not 1 <= max_padding < float("inf"):
        raise RetrofitError(
            f"max_padding must be a finite number >= 1 (padded work / real work; 1 = equal shapes only), got "
            f"{max_padding!r}; use e.g. 1.5, or leave it unset for one predict per table"
        )
    check_max_cells(max_cells)


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


def _padded_shape(bucket: Sequence[MemberInput]) -> tuple[int, int, int]:
    """The (train rows, test rows, columns) every member of `bucket` is padded to."""
    return tuple(max(m.shape[i] for m in bucket) for i in range(3))
