"""Hosts by name: the shipped, pretrained small hosts and user checkpoints.

`get_path(name)` gives the shipped file of a named host; `check_checkpoint(path)` validates a
user's file (v2, v2.5, v2.6, v3 checkpoints, `.ckpt` or `.safetensors`) at once and offline, so a
bad path fails in milliseconds instead of reaching tabpfn's hub download.
"""

from importlib.resources import files
from pathlib import Path

from safetensors import SafetensorError, safe_open

from retrofit.adapters import ARCHITECTURES
from retrofit.errors import RetrofitError

SHIPPED_HOSTS: dict[str, str] = {
    "tiny_v3": "tabpfn-tiny-v3-regressor.safetensors",
    "tiny_v2": "tabpfn-tiny-v2-regressor.safetensors",
}
"""Host name -> file in this package. The file name carries the version tag ("v2"/"v3") that
tabpfn reads off a checkpoint's name."""


def available() -> list[str]:
    """Names of the shipped hosts."""
    return list(SHIPPED_HOSTS)


def get_path(name: str) -> Path:
    """Path of the shipped host `name` (e.g. "tiny_v3"); RetrofitError if unknown or missing."""
    if name not in SHIPPED_HOSTS:
        raise RetrofitError(
            f"unknown host {name!r}; shipped hosts: {available()}. For your own checkpoint use "
            "host=checkpoint host.path=/path/to/model.ckpt"
        )
    path = Path(str(files("retrofit.hosts") / SHIPPED_HOSTS[name]))
    if not path.is_file():
        raise RetrofitError(
            f"shipped host {name!r} is missing at {path}; reinstall the package or rebuild it with "
            f"`make pretrain-{name.split('_')[-1]}`"
        )
    return path


def _architecture_of_safetensors(path: Path) -> str:
    try:
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            header = fh.metadata() or {}
    except (SafetensorError, OSError) as exc:
        raise RetrofitError(f"{path} is not a readable safetensors file ({exc}); pass a TabPFN checkpoint") from exc
    if "config" not in header:
        raise RetrofitError(f"{path} has no TabPFN 'config' header; it is not a TabPFN checkpoint")
    return header.get("architecture_name", '"tabpfn_v2"').strip('"')


def _architecture_of_torch_file(path: Path) -> str:
    """The architecture named in a torch checkpoint, read with torch's safe loader only.

    `weights_only=True` unpickles tensors and plain containers and refuses anything else, so a
    file whose pickle would run code is refused here and its code never runs. tabpfn loads `.ckpt`
    files with the same safe default; validation is never less safe than the loader it guards.
    """
    import pickle

    import torch  # local: loading a pickle is the slow, rare path

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
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt or "config" not in ckpt:
        raise RetrofitError(f"{path} is a torch file but not a TabPFN checkpoint (needs 'state_dict' and 'config')")
    return ckpt.get("architecture_name", "tabpfn_v2")


def _unsafe_globals(path: Path) -> list[str]:
    """The globals (callables, classes) a torch file's pickle would load beyond torch's safe set;
    [] when the file is not a torch archive at all. Reads the pickle's opcodes, runs nothing."""
    import torch

    try:
        return torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception:  # not a torch zip archive: nothing to list, the caller reports it as unreadable
        return []


def check_checkpoint(path: str | Path) -> Path:
    """Validate a user checkpoint offline; returns its absolute path.

    RetrofitError if the file is missing, unreadable, not a TabPFN checkpoint, or of an
    architecture the harness does not support.
    """
    path = Path(path).expanduser().resolve()
    architecture_name(path)
    return path


def architecture_name(path: str | Path) -> str:
    """The registered architecture (a key of `retrofit.adapters.ARCHITECTURES`) of the checkpoint at
    `path`; RetrofitError as `check_checkpoint`."""
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise RetrofitError(f"checkpoint {path} does not exist; pass host.path=<an existing TabPFN .ckpt/.safetensors>")
    arch = _architecture_of_safetensors(path) if path.suffix == ".safetensors" else _architecture_of_torch_file(path)
    arch = "tabpfn_v2_5" if arch == "base" else arch
    if arch not in ARCHITECTURES:
        raise RetrofitError(f"{path}: architecture {arch!r} has no adapter spec; supported: {sorted(ARCHITECTURES)}")
    return arch
