"""The sweep: run cases (one fit, every variant), store one result file per unit, aggregate, check.

`case` runs one host × dataset × seed (interleaved predict timing); `units` names and stores unit
results (a local cache, fingerprinted); `schema` types the sweep's config and reads its paths;
`compose` expands a sweep into its jobs and finds group options (Hydra only); `config` builds a
`Case` from a Hydra config (typed: every key applied or refused); `manifest` records which units
each job runs, so `collect` reads a sweep's records without building a case; `hydra_callbacks`
checks a whole sweep before it runs and writes its results after; `aggregate` writes the CSV,
table and plot; `bootstrap` is the two-level CI; `reproduce` checks a fresh CSV against the
committed one; `decomposition` splits the retrofit cost into its sink and presence effects;
`tau_sweep` runs ΔRMSE against the calibration constant c.
"""
