"""Where a composition may read configs from: folders, the project's own config package and Hydra's.

Hydra reads each entry of a command's search path (`hydra.searchpath` on the command line or in a
root config, `--config-path`, `--config-dir`) through the config source its scheme names, made as
the composition starts: `file://<folder>` reads YAML files, while `pkg://<package>` imports the
package (running its `__init__`) to find its files, and `structured://<module>` imports the module.
A search path entry is therefore code unless it is a folder. `listed_sources` makes Hydra's sources
registry hand out `pkg://` only for the packages of `PACKAGES` and `structured://` only for the
ConfigStore itself (the empty path, Hydra's schema source), refusing any other entry in one line as
its source is made, before anything is imported, and `file://` sources that refuse a file whose YAML
aliases expand past `retrofit.bounds.MAX_CONFIG_VALUES` values before OmegaConf copies them;
`retrofit.jobs.launch` holds it for the whole command, so Hydra's own compositions (the run, each
job of a multirun, `--help`, `--cfg`) are held to it as `retrofit.jobs.compose` is. The launchers'
and sweepers' configs come from the ConfigStore (`hydra_plugins.*.config` stores them), so no plugin
needs a package of its own here.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

from hydra._internal.core_plugins import (  # noqa: TID251 - the module docstring says why
    file_config_source,
    importlib_resources_config_source,
    structured_config_source,
)
from hydra._internal.sources_registry import SourcesRegistry  # noqa: TID251
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigResult

from retrofit.bounds import check_yaml_values
from retrofit.errors import RunnerError
from retrofit.runner import BUILTIN_SEARCHPATH

PACKAGES = ("hydra.conf", BUILTIN_SEARCHPATH.removeprefix("pkg://"))
"""The packages a search path may name as `pkg://<package>`: Hydra's own configs (every search path
starts with it) and the project's built-in variants (`configs/sweep.yaml` lists it)."""
FOLDER_FIX = "put the YAML files in a folder and name it file://<folder> (or --config-dir <folder>)"


def _where(provider: str) -> str:
    """Hydra's provider of a search path entry as a user finds it: Hydra calls the root config `main`."""
    return provider.replace("hydra.searchpath in main", "hydra.searchpath in the root config")


class ImportlibResourcesConfigSource(importlib_resources_config_source.ImportlibResourcesConfigSource):
    """Hydra's `pkg://` source for the packages of `PACKAGES`; RunnerError, before the package is
    imported, for any other. It carries Hydra's class name: Hydra's registry keeps a source of the
    same name when its plugin scan registers its own (as it does in a launcher's worker, which gets
    the registry pickled, this class by reference), and refuses one of another name."""

    def __init__(self, provider: str, path: str) -> None:
        package = path.removeprefix("pkg://").replace("/", ".").rstrip(".")  # as Hydra normalizes it
        if package not in PACKAGES:
            raise RunnerError(
                f"{path} ({_where(provider)}): a pkg:// search path entry imports its package, which runs its code; "
                f"only {', '.join(f'pkg://{name}' for name in PACKAGES)} are read that way: {FOLDER_FIX}"
            )
        super().__init__(provider, path)


class StructuredConfigSource(structured_config_source.StructuredConfigSource):
    """Hydra's schema source `structured://` (the ConfigStore); RunnerError, before anything is
    imported, for `structured://<module>`, which imports the module. Named as Hydra's, for the reason
    `ImportlibResourcesConfigSource` gives."""

    def __init__(self, provider: str, path: str) -> None:
        if path.removeprefix("structured://"):
            raise RunnerError(
                f"{path} ({_where(provider)}): a structured:// search path entry imports its module; {FOLDER_FIX}"
            )
        super().__init__(provider, path)


class FileConfigSource(file_config_source.FileConfigSource):
    """Hydra's `file://` source, reading a config file only once its YAML is known to hold at most
    `retrofit.bounds.MAX_CONFIG_VALUES` values with its aliases expanded (`check_yaml_values`):
    OmegaConf would copy a "billion laughs" file's values for hours. Named as Hydra's, for the
    reason `ImportlibResourcesConfigSource` gives."""

    def load_config(self, config_path: str) -> ConfigResult:
        path = os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path)))
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as file:
                check_yaml_values(file.read(), path)
        return super().load_config(config_path)


SOURCES = (ImportlibResourcesConfigSource, StructuredConfigSource, FileConfigSource)
LISTED = {source.scheme(): source for source in SOURCES}
"""Hydra's config sources by scheme, each replaced by one that refuses what it may not read: the
schemes whose sources import code, what is not listed; `file://`, a file too large once expanded."""


@contextmanager
def listed_sources() -> Iterator[None]:
    """Within the block, Hydra makes a `pkg://` or `structured://` source only as `LISTED` allows
    (the module docstring); Hydra's own registry is restored afterwards. Hydra's plugins are scanned
    first (a scan registers the sources it finds, and would refuse a registry that differs)."""
    Plugins.instance()
    types = SourcesRegistry.instance().types
    before = dict(types)
    types.update(LISTED)
    try:
        yield
    finally:
        types.clear()
        types.update(before)
