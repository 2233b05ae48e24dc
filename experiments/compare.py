"""Compare two retrofit_rmse.csv files unit by unit (`retrofit.jobs.compare`; make compare A=<csv> B=<csv>).

    python experiments/compare.py a=outputs/results/retrofit_rmse.csv b=results/retrofit_rmse.csv
    python experiments/compare.py outputs/results/retrofit_rmse.csv results/retrofit_rmse.csv   # the same

Prints, per numeric column, the largest |A − B| over the matched units and where, and per host ×
variant the mean ΔRMSE % in A and in B (`retrofit.results.compare`). Two bare paths are `a=` and `b=`.
"""

import sys

from retrofit.jobs import launch

if __name__ == "__main__":
    given = sys.argv[1:]
    if len(given) == 2 and not any("=" in arg or arg.startswith("-") for arg in given):
        sys.argv[1:] = [f"a={given[0]}", f"b={given[1]}"]
    launch("compare")
