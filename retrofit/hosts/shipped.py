"""Hosts by name: the shipped, pretrained small hosts in this package, and tabpfn's own models.

`get_path(name)` gives the shipped file of a named host, or the file in tabpfn's model cache of a
tabpfn version name ("v2.5"; `retrofit.hosts.locate.tabpfn_model`); a user's own checkpoint is
validated by `retrofit.hosts.validation.check_checkpoint`. A shipped host's lookup imports no
torch, tabpfn or adapters.
"""

from importlib.resources import files
from pathlib import Path

from retrofit.errors import RetrofitError

SHIPPED_HOSTS: dict[str, str] = {
    "tiny_v3": "tabpfn-tiny-v3-regressor.safetensors",
    "tiny_v2": "tabpfn-tiny-v2-regressor.safetensors",
    "tiny_v3_5": "tabpfn-tiny-v3.5-regressor.safetensors",
}
"""Host name -> file in this package. The file name carries the version tag ("v2", "v3", "v3.5")
that tabpfn reads off a checkpoint's name (`tabpfn.model_loading.resolve_model_version`): "v3_5"
would read as v3."""


def available() -> list[str]:
    """Names of the shipped hosts."""
    return list(SHIPPED_HOSTS)


def get_path(name: str) -> Path:
    """Path of the shipped host `name` (e.g. "tiny_v3"), or of tabpfn's regressor of a tabpfn version
    name (e.g. "v2.5", "auto") in tabpfn's model cache; RetrofitError if unknown or missing."""
    if name not in SHIPPED_HOSTS:
        from retrofit.hosts.locate import own_checkpoint, tabpfn_model, tabpfn_versions

        if name in tabpfn_versions():
            return tabpfn_model(name)
        known = f"unknown host {name!r}; shipped hosts: {available()}, tabpfn models: {tabpfn_versions()}"
        raise RetrofitError(f"{known}; {own_checkpoint(name)}")
    path = Path(str(files("retrofit.hosts") / SHIPPED_HOSTS[name]))
    if not path.is_file():
        raise RetrofitError(
            f"shipped host {name!r} is missing at {path}; reinstall the package or rebuild it with "
            f"`make pretrain-{name.removeprefix('tiny_')}`"
        )
    return path
