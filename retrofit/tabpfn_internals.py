"""Every private tabpfn symbol the harness uses, and only here (written against tabpfn 9.2.0).

tabpfn may rename or change a leading-underscore name in any release. Going through this module
keeps the list in one place: `PRIVATE` names each symbol with the keyword parameters the harness
passes it, and `tests/test_tabpfn_internals.py` fails naming the symbol that tabpfn moved, renamed
or re-signed. Callers use the public names below, never tabpfn's private ones.
"""

from dataclasses import dataclass
from typing import Any

import torch
from tabpfn.architectures.tabpfn_v3 import _generate_nan_and_inf_indicator
from tabpfn.architectures.tabpfn_v3_5 import _build_ecdf_context, _in_context_ecdf
from tabpfn.inference import _maybe_run_gpu_preprocessing, _prepare_model_inputs
from tabpfn.model_loading import _skip_parameter_init
from torch import nn


@dataclass(frozen=True)
class Private:
    """One private tabpfn symbol: `owner` is a module (`tabpfn.inference`) or a class in one
    (`tabpfn.regressor:TabPFNRegressor`); `name` the symbol; `params` the keyword parameters the
    harness passes; `instance`: an attribute set on instances (not on the class)."""

    owner: str
    name: str
    params: tuple[str, ...] = ()
    instance: bool = False


PRIVATE = (
    Private("tabpfn.inference", "_prepare_model_inputs"),
    Private(
        "tabpfn.inference", "_maybe_run_gpu_preprocessing", ("gpu_preprocessor", "num_train_rows", "feature_schema")
    ),
    Private("tabpfn.inference:InferenceEngine", "_set_models", ("models",)),
    Private(
        "tabpfn.regressor:TabPFNRegressor",
        "_translate_batched_logits",
        ("output", "config", "znorm_borders", "std_borders"),
    ),
    Private(
        "tabpfn.regressor:TabPFNRegressor",
        "_decode_batched_dataset",
        (
            "accumulated_logits",
            "n_estimators",
            "raw_space_bardist",
            "znorm_space_bardist",
            "y_mean",
            "y_std",
            "output_type",
            "quantiles",
        ),
    ),
    Private("tabpfn.model_loading", "_skip_parameter_init"),
    # Public, but replaced where it lives: `load_model_criterion_config` calls it by module global
    # (`retrofit.hosts.column_embeddings` wraps it to pin the v2 family's column embeddings).
    Private("tabpfn.model_loading", "load_model", ("path", "estimator_type", "devices", "force_inference_dtype")),
    Private("tabpfn.architectures.tabpfn_v3", "_generate_nan_and_inf_indicator"),
    Private("tabpfn.architectures.tabpfn_v3:TabPFNV3", "_embed_col_y"),
    Private("tabpfn.architectures.tabpfn_v3:TabPFNV3", "_embed_icl_y"),
    Private("tabpfn.architectures.tabpfn_v3:TabPFNV3", "_nan_safe_output", instance=True),
    Private("tabpfn.architectures.tabpfn_v3:TabPFNV3", "_preprocess_raw", ("x_RiBC", "num_train")),
    Private("tabpfn.architectures.tabpfn_v3_5", "_build_ecdf_context", ("x_BRiC", "num_train", "num_buckets")),
    Private("tabpfn.architectures.tabpfn_v3_5", "_in_context_ecdf", ("x_BRiC", "ecdf_context")),
    Private("tabpfn.architectures.tabpfn_v3_5:TabPFNV3p5", "_embed_col_y", ("task_type",)),
    Private("tabpfn.architectures.tabpfn_v3_5:TabPFNV3p5", "_embed_icl_y", ("task_type",)),
    Private("tabpfn.architectures.tabpfn_v3_5:TabPFNV3p5", "_preprocess_raw", ("x_RiBC", "num_train")),
)
"""The private tabpfn symbols used, each behind one function below."""

prepare_model_inputs = _prepare_model_inputs
"""(x_full (R, 1, C), y_train) of one ensemble member as tabpfn's engine builds them:
`prepare_model_inputs(device, force_inference_dtype, X_train, X_test, y_train)`."""

maybe_run_gpu_preprocessing = _maybe_run_gpu_preprocessing
"""tabpfn's per-member GPU preprocessing step (a no-op without a GPU pipeline)."""

nan_and_inf_indicator = _generate_nan_and_inf_indicator
"""tabpfn v3's NaN / ±inf indicator features of a cell tensor."""


skip_parameter_init = _skip_parameter_init
"""Context manager: models built inside skip torch's random parameter initialisation."""


def set_engine_models(engine: Any, models: list[nn.Module]) -> None:
    """Make `models` the ones a fitted regressor's inference engine (`executor_`) runs."""
    engine._set_models(models)


def translate_batched_logits(regressor: Any, **kwargs: Any) -> torch.Tensor:
    """One ensemble member's output mapped onto the regressor's shared borders, as `predict` does."""
    return regressor._translate_batched_logits(**kwargs)


def decode_batched_dataset(regressor: Any, **kwargs: Any) -> Any:
    """One table's accumulated logits decoded into `predict`'s output."""
    return regressor._decode_batched_dataset(**kwargs)


ecdf_context = _build_ecdf_context
"""tabpfn v3.5's ECDF bucket edges and counts (3, B, C, K) of the first `num_train` rows of
x (B, R, C): `ecdf_context(x_BRC, num_train, num_buckets)`."""

in_context_ecdf = _in_context_ecdf
"""tabpfn v3.5's midrank ECDF (B, R, C) of every cell against an `ecdf_context`:
`in_context_ecdf(x_BRC, context)`."""


def embed_col_y(model: nn.Module, y_BN: torch.Tensor, **task: str) -> torch.Tensor:
    """tabpfn v3's target embedding added to the cells of the train rows (v3.5 takes `task_type=`)."""
    return model._embed_col_y(y_BN, **task)


def embed_icl_y(model: nn.Module, y_BN: torch.Tensor, **task: str) -> torch.Tensor:
    """tabpfn v3's target embedding added to the in-context carriers of the train rows (v3.5 takes
    `task_type=`)."""
    return model._embed_icl_y(y_BN, **task)


def nan_safe_output(model: nn.Module) -> bool:
    """Whether a tabpfn v3 model replaces NaN in its output by 0."""
    return model._nan_safe_output


def preprocess_raw(model: nn.Module, x_RBC: torch.Tensor, num_train: int) -> torch.Tensor:
    """tabpfn v3's (and v3.5's) own standardised cells (B, R, C) of a raw input (R, B, C) whose first
    `num_train` rows are train rows: the stock stage that `o_standardised_cells` O-closes."""
    return model._preprocess_raw(x_RBC, num_train)[0]
