"""The packages whose public names load on first access: each name resolves to its module's object,
an unknown one is an AttributeError naming the package, and importing them loads no torch."""

import importlib
import subprocess
import sys

import pytest

PACKAGES = ["retrofit", "retrofit.data", "retrofit.hosts", "retrofit.explanation"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_to_its_modules_object(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        if name in module._LAZY:
            assert value is getattr(importlib.import_module(module._LAZY[name]), name)
    with pytest.raises(AttributeError, match=rf"^module '{package}' has no attribute 'no_such_name'$"):
        module.no_such_name  # noqa: B018


def test_importing_the_packages_loads_no_torch():
    code = f"import sys; import {', '.join(PACKAGES)}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_make_regressor_is_a_top_level_name_imported_first_without_a_cycle():
    """`from retrofit import make_regressor` (the docs' public name) in a fresh interpreter, before
    anything else of the package: the function of `retrofit.hosts`, with no import cycle."""
    code = (
        "from retrofit import make_regressor; import retrofit.hosts.regressor as r; "
        "print(make_regressor is r.make_regressor, make_regressor.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "retrofit.hosts.regressor"]
