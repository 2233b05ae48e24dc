"""Packages whose public names import their modules on first access (so `import retrofit` loads no
model): `lazy_attributes` is such a package's module-level `__getattr__`."""

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_attributes(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: a public name of `modules` (name -> the module defining
    it) imported from its module when first read; AttributeError for any other name."""

    def __getattr__(name: str) -> Any:
        if name in modules:
            return getattr(import_module(modules[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
