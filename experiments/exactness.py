"""OAttention exactness vs the float64 reference -> results/exactness.csv (`make exactness`).

A progress bar over the (shape, score_std, dtype) grid; `exactness_table` draws each grid point's
inputs from `seed` afresh, so measuring one point at a time gives the same rows as the whole grid.
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("exactness")
