"""Offline validation of a user's checkpoint file, before tabpfn ever sees it.

`check_checkpoint(path)` validates a user's file (v2, v2.5, v2.6, v3, v3.5 checkpoints, `.ckpt` or
`.safetensors`), given as a file, a symlink, a HuggingFace cache folder or a tabpfn model name
(`retrofit.hosts.locate`), at once and offline, so a bad path fails in milliseconds instead of
reaching tabpfn's hub download; the format is read off the name given, as tabpfn reads the version
off it. `architecture_name(path)` is the registered architecture
(`retrofit.adapters.ARCHITECTURES`) it names. Its memory is bounded by the file, never by what the
header declares: the model its config describes is built on the meta device (no storage) and
stopped once it outgrows the file, and the tensors are read one at a time to check they are finite.
"""

import json
import os
import pickle
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from torch import nn
from torch.nn.modules.module import register_module_parameter_registration_hook

from retrofit.adapters import ARCHITECTURES
from retrofit.errors import RetrofitError, bounded, listing
from retrofit.hosts import column_embeddings
from retrofit.hosts.locate import checkpoint_argument, checkpoint_file
from retrofit.hosts.shipped import available, get_path


def _read_safetensors(path: Path) -> tuple[dict[str, Any], dict[str, tuple[int, ...]]]:
    """(header fields parsed as JSON, tensor shapes) of a safetensors file; no tensor data is read.

    tabpfn `json.loads` every header field, so a field that is not JSON is refused here, by name.
    """
    try:
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            header = fh.metadata() or {}
            shapes = {key: tuple(fh.get_slice(key).get_shape()) for key in fh.keys()}  # noqa: SIM118
    except (SafetensorError, OSError) as exc:
        raise RetrofitError(f"{path} is not a readable safetensors file ({exc}); pass a TabPFN checkpoint") from exc
    fields = {}
    for key, text in header.items():
        try:
            fields[key] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RetrofitError(
                f"{path}: header field {key!r} is not JSON ({exc}); tabpfn reads every header field as JSON. "
                "Write the checkpoint with tabpfn.checkpoint.save_as_safetensors (or retrofit.hosts.save_host)"
            ) from None
    if "config" not in fields:
        raise RetrofitError(f"{path} has no TabPFN 'config' header; it is not a TabPFN checkpoint")
    return fields, shapes


def _read_torch_file(path: Path) -> tuple[dict[str, Any], dict[str, tuple[int, ...]]]:
    """(fields other than the state dict, tensor shapes) of a torch checkpoint, read with torch's
    safe loader only.

    `weights_only=True` unpickles tensors and plain containers and refuses anything else, so a
    file whose pickle would run code is refused here and its code never runs. tabpfn loads `.ckpt`
    files with the same safe default; validation is never less safe than the loader it guards.
    """
    try:
        ckpt = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        unsafe = _unsafe_globals(path)
        if unsafe:
            raise RetrofitError(
                f"{path} is refused: its pickle calls {unsafe}, so it loads only with torch.load(weights_only=False), "
                "which would run code stored in the file. Save the checkpoint with plain tensors and dicts (or "
                "convert it to .safetensors) and pass that file."
            ) from None
        reason = [line for line in str(exc).splitlines() if line.strip() and not line.startswith("Check the doc")]
        raise RetrofitError(
            f"{path} could not be read as a torch checkpoint ({reason[-1] if reason else exc!r})"
        ) from None
    except Exception as exc:  # torch raises many types for a corrupt file; all mean the same here
        raise RetrofitError(f"{path} could not be read as a torch checkpoint ({type(exc).__name__}: {exc})") from exc
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("state_dict"), dict) or "config" not in ckpt:
        raise RetrofitError(f"{path} is a torch file but not a TabPFN checkpoint (needs 'state_dict' and 'config')")
    shapes = {key: tuple(value.shape) for key, value in ckpt["state_dict"].items() if hasattr(value, "shape")}
    _refuse_nonfinite(path, ckpt["state_dict"].items())
    return {key: value for key, value in ckpt.items() if key != "state_dict"}, shapes


def _unsafe_globals(path: Path) -> list[str]:
    """The globals (callables, classes) a torch file's pickle would load beyond torch's safe set;
    [] when the file is not a torch archive at all. Reads the pickle's opcodes, runs nothing."""
    try:
        return torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception:  # not a torch zip archive: nothing to list, the caller reports it as unreadable
        return []


def _safetensors_tensors(path: Path) -> Iterator[tuple[str, torch.Tensor]]:
    """(name, tensor) of each tensor of a safetensors file, read one at a time."""
    with safe_open(str(path), framework="pt", device="cpu") as fh:
        for key in fh.keys():  # noqa: SIM118 (safe_open is not a mapping)
            yield key, fh.get_tensor(key)


def _refuse_nonfinite(path: Path, tensors: Iterable[tuple[str, Any]]) -> None:
    """RetrofitError naming the first floating-point tensor that holds a NaN or ±inf: a host with one
    NaN weight predicts the training mean for every row, a number that was not computed."""
    for key, tensor in tensors:
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            # numpy, not torch: one pass, no thread pool to wake per tensor
            bad = tensor.numel() - int(np.isfinite(tensor.detach().float().numpy()).sum())
            if bad:
                raise RetrofitError(
                    f"{path}: tensor {key!r} holds {bad} non-finite values (NaN or ±inf) of {tensor.numel()}; "
                    "the weights are corrupt: pass an intact checkpoint"
                )


def check_checkpoint(path: str | os.PathLike, base_dir: str | os.PathLike | None = None) -> Path:
    """Validate a user checkpoint offline; returns its file, absolute, under the name given (symlinks
    kept: `retrofit.hosts.locate.checkpoint_file`, relative paths from `base_dir`, default the
    working directory).

    RetrofitError, naming the problem and the fix, if `checkpoint_file` finds no file (a missing
    path, a symlink loop, a folder without exactly one regressor checkpoint, a tabpfn model not in
    tabpfn's cache); if the file is unreadable, not a TabPFN checkpoint, or has a header field that
    is not JSON; if its architecture has no adapter spec; if its config declares more parameters
    than the file holds tensors; if its tensors do not fit the architecture its header names, built
    from its config (what tabpfn's strict `load_state_dict` would refuse at fit); if a tensor holds
    a NaN or ±inf (named); or if it is classification-only (see `_regression_head_missing`).
    """
    return _validated(checkpoint_file(path, base_dir))[0]


def host_file(host: str | os.PathLike) -> Path:
    """The file of `host`: a shipped host's for its name (`retrofit.hosts.shipped.get_path`), else
    `check_checkpoint(host)` (a checkpoint file, a HuggingFace cache folder or a tabpfn model name),
    whose refusals name the argument `host`."""
    with checkpoint_argument("host"):
        return get_path(host) if host in available() else check_checkpoint(host)


def architecture_name(path: str | os.PathLike) -> str:
    """The registered architecture (a key of `retrofit.adapters.ARCHITECTURES`) of the checkpoint at
    `path`, validated as `check_checkpoint` does (same RetrofitErrors)."""
    return _validated(checkpoint_file(path))[1]


def _validated(path: Path) -> tuple[Path, str]:
    """(`path`, registered architecture) of a checkpoint file that passes every check of `check_checkpoint`."""
    fields, shapes = _read_safetensors(path) if path.suffix == ".safetensors" else _read_torch_file(path)
    arch = _registered_architecture(path, fields)
    model, config = _built_architecture(path, arch, fields["config"], len(shapes))
    _check_tensors(path, arch, model, shapes)
    column_embeddings.check_stored(model, path)
    if path.suffix == ".safetensors":
        _refuse_nonfinite(path, _safetensors_tensors(path))
    if _regression_head_missing(model, config):
        raise RetrofitError(
            f"{path} is a TabPFN classifier checkpoint ({arch}, max_num_classes={config.max_num_classes}): it has "
            "no regression head, and the harness retrofits regressors. Pass a TabPFN regressor checkpoint "
            "(or a multitask one, such as v3.5's, which carries both heads)."
        )
    return path, arch


def _registered_architecture(path: Path, fields: dict[str, Any]) -> str:
    """The architecture the checkpoint names (tabpfn's rules: none is v2, "base" is v2.5); RetrofitError
    unless it is a string with an adapter spec."""
    arch = fields.get("architecture_name", "tabpfn_v2")
    arch = "tabpfn_v2_5" if arch == "base" else arch
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise RetrofitError(f"{path}: architecture {arch!r} has no adapter spec; supported: {sorted(ARCHITECTURES)}")
    return arch


def _built_architecture(path: Path, arch: str, config: Any, n_tensors: int) -> tuple[Any, Any]:
    """(model, parsed config) of `arch` built from the checkpoint's `config` as tabpfn's loader builds
    it, on torch's meta device and without parameter init (`skip_parameter_init`): no tensor gets
    storage, whatever sizes the config declares. The build is stopped, and the file refused, as soon
    as it registers more parameters than the file holds tensors (`n_tensors`): a header declaring
    5000 layers over the tensors of 3 costs what the file's tensors cost, not what the header says.
    Only names, shapes and attributes are read off the model."""
    from tabpfn.architectures import ARCHITECTURES as TABPFN_ARCHITECTURES

    from retrofit.tabpfn_internals import skip_parameter_init

    module = TABPFN_ARCHITECTURES[arch]
    try:
        parsed, _ = module.parse_config(dict(config))
        with _parameters_at_most(n_tensors), skip_parameter_init(), torch.device("meta"):
            return module.get_architecture(parsed), parsed
    except _TooManyParameters:
        raise RetrofitError(
            f"{path}: its 'config' declares a model of more parameters than the file's {n_tensors} tensors "
            "(e.g. a larger nlayers); pass the config the checkpoint was saved with"
        ) from None
    except Exception as exc:  # a config tabpfn cannot build raises whatever its dataclasses raise
        raise RetrofitError(
            f"{path}: its 'config' does not build a {arch} model ({type(exc).__name__}: {bounded(str(exc))}); "
            "pass the config the checkpoint was saved with"
        ) from None


class _TooManyParameters(Exception):
    """A model under construction registered more parameters than its checkpoint holds tensors."""


@contextmanager
def _parameters_at_most(limit: int) -> Iterator[None]:
    """Raise `_TooManyParameters` from inside any module construction on this thread that registers
    a parameter beyond the `limit`-th while the block runs (torch's global parameter-registration
    hook; registrations on other threads are not counted)."""
    count, thread = 0, threading.get_ident()

    def hook(module: nn.Module, name: str, param: nn.Parameter | None) -> None:
        nonlocal count
        count += threading.get_ident() == thread
        if count > limit:
            raise _TooManyParameters

    handle = register_module_parameter_registration_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _check_tensors(path: Path, arch: str, model: Any, shapes: dict[str, tuple[int, ...]]) -> None:
    """RetrofitError unless the file's tensors are exactly the model's state (names and shapes).

    As in tabpfn's loader, tensors named `criterion.*` are the regression distribution's, not the model's.
    """
    expected = {key: tuple(value.shape) for key, value in model.state_dict().items()}
    found = {key: shape for key, shape in shapes.items() if "criterion." not in key}
    missing = [key for key in expected if key not in found]
    unexpected = [key for key in found if key not in expected]
    reshaped = [
        f"{key} {found[key]} vs {expected[key]}" for key in expected if key in found and found[key] != expected[key]
    ]
    if missing or unexpected or reshaped:
        problems = [
            f"{label} {listing(keys, limit=5)}"
            for label, keys in (
                ("missing", missing),
                ("unexpected", unexpected),
                ("of another shape (file vs model)", reshaped),
            )
            if keys
        ]
        raise RetrofitError(
            f"{path}: its tensors do not fit architecture {arch!r} built from its config: {'; '.join(problems)}. "
            "The architecture_name header or the config does not belong to these weights; fix the header, or "
            "pass the checkpoint they were saved in"
        )


def _regression_head_missing(model: Any, config: Any) -> bool:
    """Whether tabpfn built `model` for classification only, so that it has no regression head.

    tabpfn's own test (`task_type == "multiclass"`, architectures from v2.5 on), or, where the
    model has no task type (v2), an output of `max_num_classes` logits instead of `num_buckets`.
    A multitask model (v3.5) has neither attribute: it carries a regression head and passes.
    """
    if getattr(model, "task_type", None) == "multiclass":
        return True
    return getattr(model, "n_out", config.num_buckets) != config.num_buckets
