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

A refusal names every problem of every member at once, with one combined fix (`Remedy`).
`fixed_orders` gives the entries that fix both orders over a preset (what `retrofit.explain` fits
its own regressor with, so it takes tables with any number of categorical features).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from tabpfn import TabPFNRegressor

from retrofit.errors import RetrofitError
from retrofit.hosts.checkpoint import inference_config

FIX_PRESET = "lean"
"""The shipped preset whose PREPROCESS_TRANSFORMS views a refusal's fix starts from
(`retrofit.hosts.inference_config`): one per-feature view, no SVD features."""


@dataclass(frozen=True)
class Remedy:
    """What a refused setting is fitted with instead: the inference_config entry `key`=`value`, or
    (`view`) the setting `key`=`value` of every PREPROCESS_TRANSFORMS view."""

    key: str
    value: object
    view: bool = False

    def __str__(self) -> str:
        return f"{self.key}={self.value!r}" + (" in every PREPROCESS_TRANSFORMS view" if self.view else "")


@dataclass(frozen=True)
class Problem:
    """One reason a member's columns cannot be removed feature by feature: `what` the member runs,
    `why` that breaks removal, and the `remedy`."""

    what: str
    why: str
    remedy: Remedy


FIXED_CATEGORY_ORDER = Remedy("categorical_name", "ordinal", view=True)
"""The categorical encoding removal takes in place of a shuffled or expanding one: one ordinal
column per categorical feature, its category codes fixed by that feature's fit alone (tabpfn
offers no unshuffled 'very common categories' encoding)."""
SHUFFLED_SUFFIX = "_shuffled"
"""tabpfn's categorical encodings whose name ends so draw each feature's category order."""


MIXING_STEPS: dict[str, tuple[str, str, Remedy]] = {
    "AddSVDFeaturesStep": (
        "SVD features (AddSVDFeaturesStep)",
        "projections of all columns",
        Remedy("global_transformer_name", None, view=True),
    ),
    "AddFingerprintFeaturesStep": (
        "the fingerprint feature (AddFingerprintFeaturesStep)",
        "a hash of the whole row",
        Remedy("FINGERPRINT_FEATURE", False),
    ),
    "NanHandlingPolynomialFeaturesStep": (
        "polynomial features (NanHandlingPolynomialFeaturesStep)",
        "products of pairs of columns",
        Remedy("POLYNOMIAL_FEATURES", "no"),
    ),
}
"""tabpfn preprocessing step (class name) -> (what it is, why it mixes columns, what to use instead)."""

COUNT_DEPENDENT: dict[str, tuple[str, str, Remedy]] = {
    "ShuffleFeaturesStep": (
        "feature shuffling (FEATURE_SHIFT_METHOD={value!r})",
        "each member's column order is drawn for the number of features, so a refit without a feature orders "
        "the others differently",
        Remedy("FEATURE_SHIFT_METHOD", None),
    ),
    "EncodeCategoricalFeaturesStep": (
        "shuffled categorical encoding (categorical_name={value!r}) of several categorical features",
        "each feature's category order is drawn after those of the categorical features before it",
        FIXED_CATEGORY_ORDER,
    ),
    "ReshapeFeatureDistributionsStep": (
        "append_original={value!r}, which did not append at this feature count",
        "'auto' appends the original columns on narrower tables, so a refit on fewer features lays the columns "
        "out differently",
        Remedy("append_original", False, view=True),
    ),
}
"""tabpfn preprocessing step (class name) -> (the setting whose draw or layout depends on the
number of features, with `{value}`; why; what to use instead); `count_dependent` says when a
fitted step has it."""


def member_feature_columns(regressor: TabPFNRegressor) -> list[np.ndarray]:
    """Per ensemble member, the raw feature index (0..n_features_in_-1) of each of its model-input
    columns, in the member's column order.

    One RetrofitError naming every problem of every member (each once, with the members it
    concerns) and one combined fix, where preprocessing mixes columns (`MIXING_STEPS`), draws or
    lays out columns by the feature count (`COUNT_DEPENDENT`), subsamples features (more features
    than max_features_per_estimator), runs a device-side pipeline, or yields a column not
    traceable to one raw feature.
    """
    maps, refused = [], {}
    members = regressor.executor_.ensemble_members
    for index, member in enumerate(members):
        problems, mixed = _step_problems(member)
        problems += _layout_problems(member, regressor.n_features_in_)
        inputs = {f.name: i for i, f in enumerate(member.cpu_preprocessor.initial_feature_schema_.features)}
        sources = [f.name if f.name in inputs else f.ancestor for f in member.feature_schema.features]
        unknown = [
            f.name
            for f, s in zip(member.feature_schema.features, sources, strict=True)
            if s not in inputs and not f.name.startswith(mixed)
        ]
        if unknown:
            problems.append(
                Problem(
                    f"an encoding that yields columns {unknown}",
                    "they are not derived from one input feature (e.g. one-hot expansions)",
                    FIXED_CATEGORY_ORDER,
                )
            )
        for problem in problems:
            refused.setdefault(problem, []).append(index)
        if not problems:
            maps.append(np.array([inputs[s] for s in sources], dtype=np.int64))
    if refused:
        raise RetrofitError(_refusal(refused, len(members)))
    return maps


def fixed_orders(config: Any) -> dict[str, Any]:
    """The inference_config entries that refit tabpfn's `config` (an InferenceConfig, e.g. a host's
    stored one, `TabPFNRegressor.get_inference_config()`) with the column and category orders that
    removal needs fixed (`COUNT_DEPENDENT`): no feature shuffling, and in each PREPROCESS_TRANSFORMS
    view a shuffled categorical encoding replaced by `FIXED_CATEGORY_ORDER`. Its other settings
    are kept; `member_feature_columns` still refuses any that removal cannot take."""
    shift = COUNT_DEPENDENT["ShuffleFeaturesStep"][2]
    category = FIXED_CATEGORY_ORDER
    views = [
        {**vars(view), **({category.key: category.value} if view.categorical_name.endswith(SHUFFLED_SUFFIX) else {})}
        for view in config.PREPROCESS_TRANSFORMS
    ]
    return {shift.key: shift.value, "PREPROCESS_TRANSFORMS": views}


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


def _step_problems(member: object) -> tuple[list[Problem], tuple[str, ...]]:
    """The problems of one ensemble member's CPU preprocessing steps, in pipeline order, and the
    name prefixes of the columns its refused column-mixing steps append (named by their step)."""
    problems, prefixes = [], ()
    for step in (step[0] if isinstance(step, tuple) else step for step in member.cpu_preprocessor.steps):
        name = type(step).__name__
        if name in MIXING_STEPS:
            problems.append(Problem(*MIXING_STEPS[name]))
            prefixes += (f"{step.added_feature_prefix()}_",)
        value = count_dependent(step)
        if value is not None:
            what, why, remedy = COUNT_DEPENDENT[name]
            problems.append(Problem(what.format(value=value), why, remedy))
    return problems, prefixes


def _layout_problems(member: object, n_features: int) -> list[Problem]:
    """The problems of one ensemble member outside its CPU steps: a device-side pipeline, feature
    subsampling."""
    problems = []
    if member.gpu_preprocessor is not None:
        problems.append(
            Problem(
                "device-side preprocessing (ENABLE_GPU_PREPROCESSING)",
                "it reorders and projects columns after the CPU schema",
                Remedy("ENABLE_GPU_PREPROCESSING", False),
            )
        )
    n_inputs = len(member.cpu_preprocessor.initial_feature_schema_.features)
    if member.feature_indices is not None and not np.array_equal(member.feature_indices, np.arange(n_inputs)):
        problems.append(
            Problem(
                f"feature subsampling ({n_inputs} of {n_features} features, over max_features_per_estimator)",
                "the member's features are a draw that depends on the feature count (explaining fewer avoids it too)",
                Remedy("max_features_per_estimator", n_features, view=True),
            )
        )
    return problems


def _refusal(refused: dict[Problem, list[int]], n_members: int) -> str:
    """The one-line refusal: each problem with the members it concerns and why, then the fix."""
    named = "; ".join(
        f"{_members(indices, n_members)} {problem.what}: {problem.why} (needs {problem.remedy})"
        for problem, indices in refused.items()
    )
    return (
        "feature removal needs preprocessing fitted feature by feature, independent of the feature count, but "
        f"{named}; refit with inference_config={_combined_fix(problem.remedy for problem in refused)} "
        "(added to any entries given before) and retrofit it with 'o_closed' again"
    )


def _members(indices: list[int], n_members: int) -> str:
    """'every member runs', 'member 2 runs', 'members 0-3 run' or 'members 0, 2 run' (`indices` ascending)."""
    if len(indices) == n_members:
        return "every member runs"
    if len(indices) == 1:
        return f"member {indices[0]} runs"
    contiguous = len(indices) > 2 and indices[-1] - indices[0] == len(indices) - 1
    listed = f"{indices[0]}-{indices[-1]}" if contiguous else ", ".join(map(str, indices))
    return f"members {listed} run"


def _combined_fix(remedies: Iterable[Remedy]) -> str:
    """One inference_config dict, as Python source, holding every remedy: inference_config entries
    as they are; view settings as the `FIX_PRESET` preset's views, with those it does not have."""
    remedies = list(dict.fromkeys(remedies))
    entries = [f"{remedy.key!r}: {remedy.value!r}" for remedy in remedies if not remedy.view]
    if any(remedy.view for remedy in remedies):
        entries.append(f"'PREPROCESS_TRANSFORMS': {_fix_views([r for r in remedies if r.view])}")
    return "{" + ", ".join(entries) + "}"


def _fix_views(remedies: list[Remedy]) -> str:
    """The `FIX_PRESET` preset's views, as Python source, with each view setting of `remedies`
    that one of them lacks."""
    preset = f"retrofit.hosts.inference_config({FIX_PRESET!r})['PREPROCESS_TRANSFORMS']"
    views = inference_config(FIX_PRESET)["PREPROCESS_TRANSFORMS"]
    missing = [remedy for remedy in remedies if any(view[remedy.key] != remedy.value for view in views)]
    if not missing:
        return preset
    changes = ", ".join(f"{remedy.key!r}: {remedy.value!r}" for remedy in missing)
    return f"[{{**view, {changes}}} for view in {preset}]"
