"""Building tabpfn architectures from a config and writing them as tabpfn checkpoints.

`save_host` writes a `.safetensors` checkpoint in tabpfn's own format
(`tabpfn.checkpoint.save_as_safetensors`): tensors plus JSON header fields `config`,
`architecture_name`, `inference_config` and our `host_card`. It loads through the real path,
`tabpfn.TabPFNRegressor(model_path=...)`, with no pickle involved. `save_as_published` writes a
model the way tabpfn's published checkpoints of its version are stored (`PUBLISHED_FORMATS`).
Both store the column embeddings a v2-family model is pinned to (`retrofit.hosts.column_embeddings`,
header field / key `column_embeddings`) and refuse one that would draw them on the device.
"""

import dataclasses
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tabpfn.architectures import ARCHITECTURES
from tabpfn.architectures.shared.bar_distribution import FullSupportBarDistribution
from tabpfn.checkpoint import save_as_safetensors
from tabpfn.constants import ModelVersion
from tabpfn.inference_config import InferenceConfig
from tabpfn.preprocessing import PreprocessorConfig

from retrofit.hosts import column_embeddings
from retrofit.io import write_atomic


def build_host(arch_name: str, arch_kwargs: dict[str, Any], seed: int = 0) -> tuple[torch.nn.Module, Any]:
    """A randomly initialised tabpfn regression architecture `arch_name` with `arch_kwargs`.

    Returns `(model, config)`. Raises ValueError on an unknown architecture or an unused key
    (a typo in a config must not be silently ignored).
    """
    if arch_name not in ARCHITECTURES:
        raise ValueError(f"unknown tabpfn architecture {arch_name!r}; known: {sorted(ARCHITECTURES)}")
    module = ARCHITECTURES[arch_name]
    config, unused = module.parse_config(dict(arch_kwargs))
    if unused:
        raise ValueError(f"architecture {arch_name!r} does not use config keys {sorted(unused)}; remove them")
    torch.manual_seed(seed)
    return module.get_architecture(config), config


def regression_logits(model: torch.nn.Module, x_RBF: torch.Tensor, y_train_NB: torch.Tensor) -> torch.Tensor:
    """The bar-distribution logits `(test rows, B, buckets)` of `model` on a batch whose first
    `N = len(y_train_NB)` rows are the training rows.

    v3.5 models are multitask: their forward takes a `task_type` and gets "regression" (tabpfn's
    own inference engine decides the same way, from the forward's signature).
    """
    if "task_type" in inspect.signature(model.forward).parameters:
        return model(x_RBF, y_train_NB, task_type="regression")
    return model(x_RBF, y_train_NB)


def set_borders(model: torch.nn.Module, borders_K1: torch.Tensor) -> FullSupportBarDistribution:
    """Put the bucket borders where the architecture keeps them; returns the matching criterion.

    v3 keeps them as the model buffer `regression_borders`, v3.5 as the buffer of its multitask
    heads (`heads.regression_borders`, exposed as `model.regression_borders`); the v2 family keeps
    them in the criterion state, which `save_host` stores under `criterion.*`.
    """
    if hasattr(model, "regression_borders"):
        model.regression_borders.copy_(borders_K1)
    return FullSupportBarDistribution(borders_K1.clone())


_ORDINAL = "ordinal_very_common_categories_shuffled"
INFERENCE_PRESETS: dict[str, list[dict[str, Any]]] = {
    # Raw columns (the model standardises internally): what the prior shows the host in training.
    "raw": [dict(name="none", categorical_name=_ORDINAL, append_original=False)],
    # One squashing-scaler view per estimator (robust scaling with soft clipping of outliers).
    "lean": [dict(name="squashing_scaler_default", categorical_name=_ORDINAL, append_original=False)],
    # Estimators alternate between the raw and the squashed view.
    "raw_and_squashed": [
        dict(name="none", categorical_name=_ORDINAL, append_original=False),
        dict(name="squashing_scaler_default", categorical_name=_ORDINAL, append_original=False),
    ],
}
"""Preset name -> the preprocessing views its estimators cycle through (no fingerprint feature,
no target transform: y is only z-scored, as in pretraining)."""


@dataclass(frozen=True)
class TabpfnPreset:
    """tabpfn's regression defaults of `version` (`safepower` target view, quantile / power /
    squashing views with SVD features), with its row-hash fingerprint column or without it.

    The fingerprint appends a SHA-256 hash of each preprocessed row: a last-bit change upstream
    (another CPU's BLAS kernel) flips hashes, so a host that was not pretrained with that column
    is not stable under last-bit input changes with it on."""

    version: ModelVersion
    fingerprint: bool


TABPFN_PRESETS: dict[str, TabpfnPreset] = {
    "v2_default": TabpfnPreset(ModelVersion.V2, fingerprint=True),
    "v2_5_default": TabpfnPreset(ModelVersion.V2_5, fingerprint=True),
    "v2_no_fingerprint": TabpfnPreset(ModelVersion.V2, fingerprint=False),
    "v2_5_no_fingerprint": TabpfnPreset(ModelVersion.V2_5, fingerprint=False),
}
"""Preset name -> tabpfn's regression defaults it is: `*_default` as tabpfn ships them
(fingerprint on), `*_no_fingerprint` the same with the fingerprint off."""


def inference_config(preset: str) -> dict[str, Any]:
    """The regression inference config stored in (or passed over) a checkpoint, by preset name
    (`INFERENCE_PRESETS` or `TABPFN_PRESETS`). Which preset a shipped host stores is chosen by
    measurement on datasets disjoint from the quality bar (`make preset-selection`)."""
    if preset in TABPFN_PRESETS:
        tabpfn = TABPFN_PRESETS[preset]
        default = InferenceConfig.get_default("regression", tabpfn.version)
        return dataclasses.asdict(dataclasses.replace(default, FINGERPRINT_FEATURE=tabpfn.fingerprint))
    if preset not in INFERENCE_PRESETS:
        raise ValueError(
            f"unknown inference preset {preset!r}; use one of {sorted([*INFERENCE_PRESETS, *TABPFN_PRESETS])}"
        )
    base = InferenceConfig.get_default("regression", ModelVersion.V2_5)
    views = [
        PreprocessorConfig(max_features_per_estimator=500, global_transformer_name=None, **v)
        for v in INFERENCE_PRESETS[preset]
    ]
    config = dataclasses.replace(
        base, PREPROCESS_TRANSFORMS=views, FINGERPRINT_FEATURE=False, REGRESSION_Y_PREPROCESS_TRANSFORMS=(None,)
    )
    return dataclasses.asdict(config)


def save_host(
    path: Path,
    model: torch.nn.Module,
    config: Any,
    arch_name: str,
    criterion: FullSupportBarDistribution,
    inference: dict[str, Any],
    host_card: dict[str, Any] | None = None,
) -> Path:
    """Write `model` (on any device) as a tabpfn `.safetensors` checkpoint of CPU tensors at `path`
    (parents created)."""
    path = Path(path)
    if path.suffix != ".safetensors":
        raise ValueError(f"{path}: a host checkpoint must end in .safetensors")
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    if not hasattr(model, "regression_borders"):
        state.update({f"criterion.{k}": v.detach().cpu().clone() for k, v in criterion.state_dict().items()})
    checkpoint = {
        "state_dict": state,
        "config": dataclasses.asdict(config),
        "architecture_name": arch_name,
        "inference_config": inference,
        "host_card": host_card or {},
        **_carried_draws(model),
    }
    return write_atomic(path, lambda tmp: save_as_safetensors(checkpoint, tmp))


def _carried_draws(model: torch.nn.Module) -> dict[str, Any]:
    """The checkpoint entry of the column embeddings `model` is pinned to ({} if none); ValueError for
    a model that draws them on its device (its predictions would depend on where it runs)."""
    if column_embeddings.draws_on_device(model):
        raise ValueError(
            f"{type(model).__name__} draws its column embeddings on the device it runs on; pin it to the draws "
            "it is trained with first (retrofit.hosts.column_embeddings.pin_drawn)"
        )
    embeddings = column_embeddings.carried(model)
    return {} if embeddings is None else {column_embeddings.HEADER_FIELD: embeddings.to_header()}


@dataclass(frozen=True)
class PublishedFormat:
    """How tabpfn's published regression checkpoints of one architecture are stored.

    `file_name`: a published name (tabpfn reads the version off it); `architecture_name`: the
    header's name, None where the files have none (v2); `inference_version`: the version whose
    tabpfn regression defaults stand in for the stored inference config, None where the files
    store none and tabpfn picks the defaults itself (v2, v2.5); `criterion`: whether the bucket
    borders are also stored as `criterion.*` state (tabpfn's `save_tabpfn_model` does so for
    regressors; v3.5's multitask files keep them in the heads only).
    """

    file_name: str
    architecture_name: str | None
    inference_version: ModelVersion | None
    criterion: bool


PUBLISHED_FORMATS: dict[str, PublishedFormat] = {
    "tabpfn_v2": PublishedFormat("tabpfn-v2-regressor.ckpt", None, None, True),
    "tabpfn_v2_5": PublishedFormat("tabpfn-v2.5-regressor-v2.5_default.ckpt", "base", None, True),
    "tabpfn_v2_6": PublishedFormat("tabpfn-v2.6-regressor-v2.6_default.ckpt", "tabpfn_v2_6", ModelVersion.V2_5, True),
    "tabpfn_v3": PublishedFormat("tabpfn-v3-regressor-v3_default.ckpt", "tabpfn_v3", ModelVersion.V2_5, True),
    "tabpfn_v3_5": PublishedFormat("tabpfn-v3.5-20260909.safetensors", "tabpfn_v3_5", ModelVersion.V2_5, False),
}
"""Architecture -> the layout of tabpfn's published checkpoints: `.ckpt` (a torch pickle of plain
containers, loadable with `weights_only=True`) up to v3, one multitask `.safetensors` from v3.5."""


def save_as_published(
    folder: Path, model: torch.nn.Module, config: Any, arch_name: str, criterion: FullSupportBarDistribution
) -> Path:
    """Write `model` into `folder` as tabpfn publishes `arch_name` checkpoints (`PUBLISHED_FORMATS`)."""
    layout = PUBLISHED_FORMATS[arch_name]
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if layout.criterion:
        state.update({f"criterion.{k}": v.detach().clone() for k, v in criterion.state_dict().items()})
    checkpoint: dict[str, Any] = {"state_dict": state, "config": dataclasses.asdict(config), **_carried_draws(model)}
    if layout.architecture_name is not None:
        checkpoint["architecture_name"] = layout.architecture_name
    if layout.inference_version is not None:
        default = InferenceConfig.get_default("regression", layout.inference_version)
        checkpoint["inference_config"] = dataclasses.asdict(default)
    path = Path(folder) / layout.file_name
    save = save_as_safetensors if path.suffix == ".safetensors" else torch.save
    return write_atomic(path, lambda tmp: save(checkpoint, tmp))
