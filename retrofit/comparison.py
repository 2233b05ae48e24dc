"""`retrofit.compare`: the sweep's matched comparison on a table held in memory, as a DataFrame.

Per seed, ONE host regressor is fitted on the seed's split (`retrofit.data.split`: the sweep's
70/30 rule, the same cleaning and categorical encoding, `random_state = seed`,
`retrofit.fitting.fit_host`); the frozen stock host (`retrofit.retrofit(fitted, "baseline")`) and
every variant (`retrofit.retrofit(fitted, variant, **hparams)`, each variant resolved once and
named as its `retrofit.variants.Variant` is named) predict the same test rows. The
numbers are the sweep's for the same rows and settings: the same table swept from a CSV file
(`dataset=csv dataset.path=... dataset.target=...`) gives the same `rmse` (up to torch's
thread count, which the sweep fixes at 1: last-bit rounding). Nothing is stored or timed.
"""

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from retrofit.bounds import MAX_JOBS
from retrofit.data import Split, frame_table, split
from retrofit.data.prepare import check_seed
from retrofit.errors import RetrofitError, bounded, listing
from retrofit.fitting import fit_host
from retrofit.hosts import host_file
from retrofit.hosts.regressor import resolve_device
from retrofit.metrics import BarPredictive, DistributionScores, matched_deltas, rmse
from retrofit.patching import patch_variant, retrofit
from retrofit.variants import Variant, resolve_variant

TARGET = "target"
"""The target's column when `y` is given apart from the features."""
COLUMNS = ("seed", "variant", "rmse", "baseline_rmse", "delta_rmse_pct", "nll", "delta_nll", "crps", "delta_crps_pct")
"""The columns of `compare`'s frame, in order (meanings as in the sweep's `retrofit_rmse.csv`)."""


def compare(
    X: Any,
    y: Any,
    *,
    variants: Sequence[str | os.PathLike | Mapping[str, Any]] = ("full_o",),
    host: str | os.PathLike = "tiny_v3",
    seeds: Iterable[int] = (0,),
    n_estimators: int = 8,
    test_size: float = 0.3,
    categorical: Sequence[str] = (),
    device: str = "cpu",
    **hparams: Any,
) -> pd.DataFrame:
    """One row per seed × variant (`COLUMNS`): each variant against the stock host on one fit per seed.

    X, y: the features (a DataFrame, or an array whose columns become x0, x1, ...) and the target
        (an array or Series); or a DataFrame holding both and the name of its target column as `y`.
    variants: built-in variant names, variant files or specs, as `retrofit.retrofit` takes them; the
        `variant` column is each one's name (a file's stem, a spec's `name` or its adapters joined
        by `+`), so two variants of one name are refused.
    host: a shipped host name, a tabpfn model name ("v2.5") or a checkpoint (file or HuggingFace
        cache folder: `retrofit.hosts.check_checkpoint`).
    seeds: at most `retrofit.bounds.MAX_JOBS` seeds, each one fit (a longer list is refused unread).
    categorical: numeric columns that are categories (text columns always are).
    hparams: `retrofit.variants.HPARAMS` for every variant (tau=1e-2 is c of the calibrated rule).
    Raises DatasetError / RetrofitError naming the fix before anything is fitted (a split that
    cannot be made for a later seed, e.g. a constant target on its training rows, when it comes).
    """
    table = frame_table(feature_frame(X, y), y if isinstance(y, str) else TARGET, categorical=categorical)
    host_path = host_file(host)
    device = resolve_device(device)
    for name, values in (("seeds", seeds), ("variants", variants)):
        if isinstance(values, str | Mapping) or not isinstance(values, Iterable):  # list() would split a name
            given = bounded(repr(values), 100)
            raise RetrofitError(
                f"{name} must be a list, got {type(values).__name__} {given}; a list even of one: {name}=[{given}]"
            )
    seeds, variants = list(itertools.islice(seeds, MAX_JOBS + 1)), list(variants)  # a generator may never end
    if len(seeds) > MAX_JOBS:
        raise RetrofitError(
            f"seeds lists more than {MAX_JOBS} seeds (retrofit.bounds.MAX_JOBS), one fit each; compare at most "
            f"{MAX_JOBS} per call (e.g. seeds=range({MAX_JOBS})) and concatenate the frames"
        )
    for name, values in (("seeds", seeds), ("variants", variants)):
        if not values:
            raise RetrofitError(f"{name} is empty, so compare would return no row; give at least one")
    resolved = named_variants(variants, hparams)  # a bad variant or hyper-parameter: refused before any fit
    for seed in seeds:
        check_seed(seed)
    if len(set(seeds)) < len(seeds):
        raise RetrofitError(f"seeds {listing(seeds)} repeat a seed (the same split and fit twice); list each once")
    rows = []
    for seed in seeds:
        data = split(table, seed, test_size)
        fitted, _ = fit_host(host_path, data, random_state=seed, n_estimators=n_estimators, device=device)
        rows += _seed_rows(fitted, data, seed, resolved)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def named_variants(variants: Sequence[Any], hparams: Mapping[str, Any]) -> list[Variant]:
    """Each of `variants` resolved with `hparams` (`retrofit.variants.resolve_variant`); RetrofitError
    naming two that resolve to one name, which would label two variants' rows alike."""
    resolved = [resolve_variant(variant, **hparams) for variant in variants]
    names = [variant.name for variant in resolved]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        given = ", ".join(bounded(str(v), 100) for v, name in zip(variants, names, strict=True) if name == twice)
        raise RetrofitError(
            f"variants {given} are all named {twice!r}, so their rows could not be told apart; "
            "give each its own name (a file its own stem, a spec its own `name`)"
        )
    return resolved


def feature_frame(X: Any, y: Any) -> pd.DataFrame:
    """One DataFrame of the features and the target (column `y` when `y` names one, else `TARGET`)."""
    if isinstance(y, str):
        if not isinstance(X, pd.DataFrame):
            raise RetrofitError(f"y={y!r} names a column, so X must be a DataFrame holding it, got {type(X).__name__}")
        return X
    if not isinstance(X, pd.DataFrame) and np.ndim(X) != 2:
        raise RetrofitError(f"X must be a table (rows × features), got {np.ndim(X)} dimensions")
    features = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X)).add_prefix("x")
    if TARGET in features.columns:
        raise RetrofitError(f"X has a column {TARGET!r}; pass the frame with y={TARGET!r} if it is the target")
    target = np.asarray(y)
    if target.ndim != 1 or len(target) != len(features):
        raise RetrofitError(f"y must be one value per row of X ({len(features)} rows), got shape {target.shape}")
    return features.reset_index(drop=True).assign(**{TARGET: target})


def _seed_rows(fitted: Any, data: Split, seed: int, variants: Sequence[Variant]) -> list[dict[str, Any]]:
    """The rows of one seed: every resolved variant of `fitted` against its frozen stock host on `data`'s test rows."""
    baseline = _predict(retrofit(fitted, "baseline"), data.X_test)
    baseline_rmse = rmse(data.y_test, baseline[0])
    baseline_scores = DistributionScores.of(data.y_test, baseline[1])
    rows = []
    for variant in variants:
        patched = patch_variant(fitted, variant)
        mean, bars = _predict(patched, data.X_test) if patched.retrofit_report_.patched else baseline
        rmses = {"rmse": rmse(data.y_test, mean), "baseline_rmse": baseline_rmse}
        scores = DistributionScores.of(data.y_test, bars).matched(baseline_scores)
        rows.append(
            {
                "seed": seed,
                "variant": variant.name,
                **rmses,
                **matched_deltas(rmses),
                **{key: scores[key] for key in ("nll", "delta_nll", "crps", "delta_crps_pct")},
            }
        )
    return rows


def _predict(model: Any, X: np.ndarray) -> tuple[np.ndarray, BarPredictive]:
    """The mean (float64) and the predictive distribution of `model` on `X`, from one call."""
    full = model.predict(X, output_type="full")
    return np.asarray(full["mean"], dtype="float64"), BarPredictive.from_tabpfn(full)
