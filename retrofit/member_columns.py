"""Which raw feature each model-input column of an ensemble member comes from.

tabpfn preprocesses every ensemble member on the CPU before the model; removal declares absence
at the model's input, so a raw feature is removed by declaring absent the member columns derived
from it. That is exact only if every member column is derived from ONE raw feature, by a fit
that does not look at other features' values: per-feature distribution transforms (squashing
scaler, quantile, power), ordinal categorical encoding and constant-column removal are; the
steps in `MIXING_STEPS` are not, and are refused. Removal must also equal a refit on the table
without the removed features, so a draw or a layout that depends on the number of features is
refused too (`COUNT_DEPENDENT`): with it a refit on fewer features orders or lays out the
others differently, and the model reads column order. The map is read off tabpfn's own feature
schema (each output column keeps its input feature's name, or names it as `ancestor`).
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

COUNT_DEPENDENT: dict[str, tuple[str, str]] = {
    "ShuffleFeaturesStep": (
        "feature shuffling (FEATURE_SHIFT_METHOD={value!r})",
        "each member's column order is drawn for the number of features, so a refit without a feature orders "
        "the others differently; fit with inference_config={'FEATURE_SHIFT_METHOD': None}",
    ),
    "EncodeCategoricalFeaturesStep": (
        "shuffled categorical encoding (categorical_name={value!r}) of several categorical features",
        "each feature's category order is drawn after those of the categorical features before it; use "
        "categorical_name='ordinal' in PREPROCESS_TRANSFORMS",
    ),
    "ReshapeFeatureDistributionsStep": (
        "append_original={value!r}, which did not append at this feature count",
        "'auto' appends the original columns on narrower tables, so a refit on fewer features lays the columns "
        "out differently; set append_original to True or False in PREPROCESS_TRANSFORMS",
    ),
}
"""tabpfn preprocessing step (class name) -> (the setting whose draw or layout depends on the
number of features, with `{value}`; why, and what to set instead); `count_dependent` says when a
fitted step has it."""


def member_feature_columns(regressor: TabPFNRegressor) -> list[np.ndarray]:
    """Per ensemble member, the raw feature index (0..n_features_in_-1) of each of its model-input
    columns, in the member's column order.

    RetrofitError naming the step for a member whose preprocessing mixes columns
    (`MIXING_STEPS`), draws or lays out columns by the feature count (`COUNT_DEPENDENT`),
    subsamples features (more features than max_features_per_estimator),
    runs a device-side pipeline, or yields a column not traceable to one raw feature.
    """
    maps = []
    for index, member in enumerate(regressor.executor_.ensemble_members):
        steps = [step[0] if isinstance(step, tuple) else step for step in member.cpu_preprocessor.steps]
        for step in steps:
            name = type(step).__name__
            if name in MIXING_STEPS:
                raise _refusal(index, name, MIXING_STEPS[name])
            value = count_dependent(step)
            if value is not None:
                what, reason = COUNT_DEPENDENT[name]
                raise _refusal(index, what.format(value=value), reason)
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


def count_dependent(step: object) -> object | None:
    """The setting of a fitted tabpfn preprocessing `step` that makes its draw or layout depend on
    the number of features (`COUNT_DEPENDENT`), None when it has none: feature shuffling or
    rotation; a shuffled categorical encoding of two or more categorical features (one stream of
    draws, in column order); append_original='auto' that did not append."""
    name = type(step).__name__
    if name == "ShuffleFeaturesStep":
        return step.shuffle_method
    if name == "EncodeCategoricalFeaturesStep" and len(getattr(step, "random_mappings_", {})) > 1:
        return step.categorical_transform_name
    if name == "ReshapeFeatureDistributionsStep" and step.append_to_original == "auto":
        return None if step.append_to_original_decision_ else "auto"
    return None


def _refusal(member: int, step: str, reason: str) -> RetrofitError:
    return RetrofitError(
        f"feature removal needs preprocessing fitted feature by feature, independent of the feature count, but "
        f"ensemble member {member} runs {step}: "
        f"{reason}. Refit the regressor so, then retrofit it with 'o_closed' again."
    )
