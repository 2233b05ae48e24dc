"""`retrofit.explain`: Shapley values (and pairwise interactions) of rows of a table in memory, by
declaring features absent in an o_closed host (`retrofit.removal`), with no refit.

One host regressor is fitted on every row of the table (cleaned and encoded as the sweep does,
`retrofit.data.whole`) with the fixed column and category orders removal needs over the host's
stored preset (`retrofit.member_columns.fixed_orders`: no feature shuffling, an ordinal encoding in
place of a shuffled one, so any number of categorical features works), O-closed
(`retrofit.retrofit(fitted, "o_closed")`), and each chosen row's prediction is split among its
features: v(S) is the closed model's prediction given the table with only S's
features (context and query), v(∅) the model given the targets alone. Every chosen row shares the
one fitted context, so each coalition is one batch element evaluated once for all rows.

Before any work `say` gets the plan (`Plan`: coalitions × rows, exact or shapiq's approximator);
after the fit, one timed forward of a few coalitions gives the estimate of the whole, and a
progress bar (tqdm) counts the coalitions. `budget=None` enumerates all 2^n coalitions (shapiq's
ExactComputer) while that takes under `EXACT_SECONDS`; above it, or above
`retrofit.removal.game.EXACT_MAX_FEATURES` features, pass `budget` (coalitions per row) for shapiq's
KernelSHAP (order 1) or KernelSHAP-IQ (order 2) over the same value function, at least the
estimate's unknowns (`retrofit.removal.game.min_budget`; a smaller budget is refused, naming it).

The modules, one job each: `settings` (the knobs and their defaults, `ExplainSettings`, shared by
`explain` and the explain job), `plan` (what is computed, checked before the fit), `estimate` (the timed
probe), `columns` (the frame of values and its columns), `table` (`explain_table`, a cleaned table:
the explain job's entry), `files` (the CSV and the bar chart the job and `explain(out_dir=...)`
write) and `in_memory` (`explain`, X and y in memory). The names below are
imported on first access, so reading `COLUMN_DOCS` imports no model.
"""

from retrofit.lazy import lazy_attributes

_LAZY = {
    "DEFAULTS": "retrofit.explanation.settings",
    "EXACT_SECONDS": "retrofit.explanation.settings",
    "ExplainSettings": "retrofit.explanation.settings",
    "APPROXIMATORS": "retrofit.explanation.plan",
    "ORDERS": "retrofit.explanation.plan",
    "Plan": "retrofit.explanation.plan",
    "PROBE": "retrofit.explanation.estimate",
    "COLUMNS": "retrofit.explanation.columns",
    "COLUMN_DOCS": "retrofit.explanation.columns",
    "CHUNKS": "retrofit.explanation.table",
    "explain_table": "retrofit.explanation.table",
    "explain": "retrofit.explanation.in_memory",
}
"""Public name -> the module defining it, imported on first access."""

__all__ = sorted(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY)
