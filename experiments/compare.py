"""Compare two retrofit_rmse.csv files unit by unit (`retrofit.jobs.compare`; make compare A=<csv> B=<csv>).

    python experiments/compare.py a=outputs/results/retrofit_rmse.csv b=results/retrofit_rmse.csv
    python experiments/compare.py outputs/results/retrofit_rmse.csv results/retrofit_rmse.csv   # the same

Prints, per numeric column, the largest |A − B| over the matched units and where, and per host ×
variant the mean ΔRMSE % in A and in B (`retrofit.results.compare`). Two bare file names (what
`make compare` hands over) are taken as data, character for character: they never pass through
Hydra's override grammar, which would parse quotes, brackets and `${...}` in them.
"""

import sys

from retrofit.errors import exit_on_user_error, printable_output
from retrofit.jobs import launch
from retrofit.jobs.compare import show

if __name__ == "__main__":
    given = sys.argv[1:]
    if len(given) == 2 and not any("=" in arg or arg.startswith("-") for arg in given):
        printable_output()
        with exit_on_user_error():
            show(*given)
    else:
        launch("compare")
