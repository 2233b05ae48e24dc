"""The sweep: run cases (one fit, every variant), store one result file per unit under its identity.

`schema` types the sweep's config and reads its paths; `guard` says where a run may write (the
committed `results/` only under `RETROFIT_RECORD=1`); `config` builds a `Case` from a Hydra config
(Hydra's own composition and sweeper; every key applied or refused); `decomposition` adds the sink /
presence arms as units; `case` runs one host × dataset × seed; `predictions` predicts, times and
assembles a unit's row; `store` names a unit by what its numbers come from and keeps its file;
`finish` reads a run's units back and hands them to `retrofit.results`; `hydra_callbacks` checks a
whole sweep before it runs and finishes it after; `console` is what a run shows; `tau_sweep` runs
ΔRMSE against the calibration constant c.
"""
