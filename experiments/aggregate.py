"""Aggregate a sweep's units from the unit store without running anything (e.g. after an interrupted
run, or after SLURM jobs that wrote into a shared cache_dir; `retrofit.jobs.aggregate`):

    python experiments/aggregate.py -m <the sweep's own overrides> [reference=<csv>]
    python experiments/aggregate.py -m +experiment=paper_table cache_dir=/shared/fs/.cache
    -> retrofit_rmse.csv, retrofit_table.md, the plots (and decomposition files) in <results_dir>;
       with reference: reproduction.txt, non-zero exit unless every row reproduces that CSV

It takes the sweep's command line and aggregates exactly that sweep's units (as the sweep does at
its end), whatever else the cache holds; a unit without a current result is named and nothing is
written. Without -m it aggregates the one case the overrides describe, as a single run would.
Config: configs/config.yaml, the sweep's, with the aggregation's callback in place of the sweep's
(`retrofit.jobs.aggregate.OVERRIDES`).
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("aggregate")
