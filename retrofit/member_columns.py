"""Which raw feature each model-input column of an ensemble member comes from.

tabpfn preprocesses every ensemble member on the CPU before the model; removal declares absence
at the model's input, so a raw feature is removed by declaring absent the member columns derived
from it. That is exact only if every member column is derived from ONE raw feature, by a fit
that does not look at other features' values: per-feature distribution transforms (squashing
scaler, quantile, power), ordinal categorical encoding, constant-column removal and the
member's fixed feature permutation are; the steps in `MIXING_STEPS` are not, and are refused.
(The permutation is a map, not a mix, but under feature shuffling it is drawn for the number of
features: the values are then those of the fitted column order, not of a refit without the
features; `retrofit.audit.raw_table` measures it, docs/closure.md says which presets avoid it.)
The map is read off tabpfn's own feature schema (each output column keeps its input feature's
name, or names it as `ancestor`).
"""

import numpy as np
from tabpfn import TabPFNRegressor

from retrofit.errors import RetrofitError

MIXING_STEPS: dict[str, str] = {
    "AddSVDFeaturesStep": (
        "SVD features (global_transformer_name) are projections of all columns; use a preset with "
        "global_transformer_name=None, e.g. the shipped hosts' 'lean' (retrofit.hosts.checkpoint.INFERENCE_PRESETS)"
    ),
    "AddFingerprintFeaturesStep": (
        "the fingerprint feature is a hash of the whole row; fit with inference_config={'FINGERPRINT_FEATURE': False}"
    ),
    "NanHandlingPolynomialFeaturesStep": (
        "polynomial features multiply pairs of columns; fit with inference_config={'POLYNOMIAL_FEATURES': 'no'}"
    ),
}
"""tabpfn preprocessing step (class name) -> why it mixes columns and what to use instead."""


def member_feature_columns(regressor: TabPFNRegressor) -> list[np.ndarray]:
    """Per ensemble member, the raw feature index (0..n_features_in_-1) of each of its model-input
    columns, in the member's column order.

    RetrofitError naming the step for a member whose preprocessing mixes columns
    (`MIXING_STEPS`), subsamples features (more features than max_features_per_estimator),
    runs a device-side pipeline, or yields a column not traceable to one raw feature.
    """
    maps = []
    for index, member in enumerate(regressor.executor_.ensemble_members):
        steps = [step[0] if isinstance(step, tuple) else step for step in member.cpu_preprocessor.steps]
        for step in steps:
            if type(step).__name__ in MIXING_STEPS:
                raise _refusal(index, type(step).__name__, MIXING_STEPS[type(step).__name__])
        if member.gpu_preprocessor is not None:
            raise _refusal(
                index,
                "ENABLE_GPU_PREPROCESSING",
                "the device-side pipeline reorders and projects columns after the CPU schema; fit with "
                "inference_config={'ENABLE_GPU_PREPROCESSING': False}",
            )
        n_inputs = len(member.cpu_preprocessor.initial_feature_schema_.features)
        if member.feature_indices is not None and not np.array_equal(member.feature_indices, np.arange(n_inputs)):
            raise _refusal(
                index,
                "feature subsampling",
                f"the member sees {n_inputs} of {regressor.n_features_in_} features, a draw that depends on the "
                "feature count; raise max_features_per_estimator above the number of features or explain fewer",
            )
        inputs = {f.name: i for i, f in enumerate(member.cpu_preprocessor.initial_feature_schema_.features)}
        sources = [f.name if f.name in inputs else f.ancestor for f in member.feature_schema.features]
        unknown = [f.name for f, s in zip(member.feature_schema.features, sources, strict=True) if s not in inputs]
        if unknown:
            raise _refusal(
                index,
                f"columns {unknown}",
                "they are not derived from one input feature (e.g. one-hot expansions); use an ordinal "
                "categorical encoding such as 'ordinal_very_common_categories_shuffled'",
            )
        maps.append(np.array([inputs[s] for s in sources], dtype=np.int64))
    return maps


def _refusal(member: int, step: str, reason: str) -> RetrofitError:
    return RetrofitError(
        f"feature removal needs column-separable preprocessing, but ensemble member {member} runs {step}: "
        f"{reason}. Refit the regressor so, then retrofit it with 'o_closed' again."
    )
