"""A run's results from its unit records, a separate step from running cases: `record` types a
unit's row, `aggregate` writes the CSV (under a lock), table and plots, `tables` keeps runs of
different settings apart and marks what lies within noise, `bootstrap` is the two-level CI, `plots`
draws them; `results_csv` reads and keys a results CSV, `unit_diff` is the one diff of two
results files (`make diff`), `reproduction` the check of a fresh record against its reference and
`across_devices` a run on another device against the CPU record."""
