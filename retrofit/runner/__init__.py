"""The sweep: run cases (one fit, every variant), store one result file per unit, aggregate, check.

`case` runs one host × dataset × seed (interleaved predict timing) and its units' identity (the
data's and the host's bytes, every setting, library versions, the code's digest: `units`); `rows`
assembles a unit's row; `units` names and stores unit results (a local cache); `schema` types the
sweep's config and reads its paths; `guard` says where a run may write (the committed `results/`
only under `RETROFIT_RECORD=1`); `compose` expands a sweep into its jobs with Hydra's sweeper and
finds group options; `config` builds a `Case` from a Hydra config (typed: every key applied or
refused); `collect` records which units each job runs and reads a sweep's records without
building a case; `hydra_callbacks` checks a whole sweep before it runs and writes its
results after; `aggregate` writes the CSV (under a lock), table and plot; `tables` keeps runs of
different settings apart and marks deltas within a host's noise floor; `bootstrap` is the two-level
CI; `compare` is the one comparison of two results files, for `make compare` and the reproduction
check; `decomposition` splits the retrofit cost into its sink and
presence effects; `tau_sweep` runs ΔRMSE against the calibration constant c.
"""
