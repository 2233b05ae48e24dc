"""What the sweep measures beside its RMSE and reads back: side-by-side timing (`timing`, the
variants' predict-time ratios) and the noise-floor table (`floor_table`, each host's floor,
against which the headline reads a mean delta).

The benchmarks themselves, and the measurement that writes the noise-floor table, are the
top-level `benchmarks` package (docs/extending.md): nothing in the library imports them.
"""
