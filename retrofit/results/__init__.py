"""A run's results from its unit records, a separate step from running cases: `record` types a
unit's row, `aggregate` writes the CSV (under a lock), table and plots, `tables` keeps runs of
different settings apart and marks what lies within noise, `bootstrap` is the two-level CI, `plots`
draws them and `compare` is the one comparison of two results files (`make compare`, reproduction)."""
