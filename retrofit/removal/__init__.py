"""Exact, batched remove-and-recontextualize on an o_closed regressor, with no refit.

`values(regressor, X, coalitions)`: predictions with only each coalition's features present;
`shapley(regressor, X, ...)`: Shapley values and interactions through shapiq on that game;
`row_values(regressor, X, rows)` and `leave_one_out(regressor, X, y)`: the same for training
rows (data valuation). See docs/removal.md.
"""

from retrofit.removal.features import values
from retrofit.removal.game import shapley
from retrofit.removal.rows import leave_one_out, row_values

__all__ = ["leave_one_out", "row_values", "shapley", "values"]
