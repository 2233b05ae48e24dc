"""Configs shipped inside the package: the built-in variants, `variant/<name>.yaml`, and the
decomposition arms, `decomposition/<name>.yaml`.

The one copy of each built-in variant: `retrofit.retrofit(regressor, "<name>")` reads it here, and
Hydra's `variant` group finds it through the search path entry `pkg://retrofit.configs` of the
root configs, so both work from an installed wheel.
"""
