"""The explanation benchmark (`make explain-bench`): Shapley values, interactions and data values
on the shipped hosts (`hosts`: tiny_v3 and tiny_v3_5), ours against a refit per coalition, per host
and dataset.

Every regressor, ours and the refits, is fitted with the preset `inference_preset` (a
`retrofit.hosts.inference_config` name, null = the host's stored one) and `feature_shift_method`;
the defaults, 'lean' without feature shuffling, are what feature removal accepts: its values are
those of an o_closed refit without the removed features, so it refuses preprocessing that mixes
columns or whose draws depend on the feature count (`retrofit.member_columns`; tiny_v3_5 stores
SVD features, both hosts store feature shuffling).

Methods (the `method` column of results/removal_bench.csv):
  closed_batched   ours: the removal game of the o_closed retrofit (`retrofit.removal`) — every
                   coalition a batch element over the one fitted context, absence declared,
                   the column tokens once per distinct column group, no refit;
  refit_shapiq     shapiq's TabPFNImputer (remove-and-recontextualize): the stock regressor
                   refitted on each coalition's columns, one row and one coalition at a time;
  stock_zeroed     the stock host, the removed features' cells set to 0 after tabpfn's
                   preprocessing (context and query) — masking by value, batched like ours;
  closed_batched_rows  ours on `n_explain_batched` query rows at once (the first ones include
                   the `n_explain` rows the others explain): every row shares the context, so a
                   coalition costs one batch element for all of them, where a refit is per row;
  refit_tabpfn     (index LOO only) the stock regressor refitted without each training row.
Indices (the `index` column): SV (Shapley values), k-SII (pairwise interactions, max_order 2;
the values of orders 1 and 2 are compared) and LOO (leave-one-out data values of the training
rows for the first `n_loo_queries` test rows: the mean squared error without the row minus with
all rows; ours `retrofit.removal.leave_one_out`, which keeps tabpfn's preprocessing fitted on all
rows, see docs/removal.md).
SV and k-SII use the same shapiq computation on every side: exact over all 2^d coalitions where
d <= `exact_max_features` (shapiq.ExactComputer evaluates the game once and both indices come
from those values, so one timed run gives both rows the same seconds), else KernelSHAP (SV) and
KernelSHAP-IQ (k-SII) with `budget` coalitions and the same `random_state` (the same
coalitions on every side, one timed run per index). All sides share v(∅) (the closed model's
value of the empty table, which a refit cannot compute: shapiq takes it as `empty_prediction`),
the explained rows and the fitted settings. Features constant on the context rows are left out
(a refit on them alone fails in tabpfn). Categorical columns are left to tabpfn's per-column type
inference (explicit indices would not survive a refit on a reduced table).
Timing: every run of a dataset in `repeats` interleaved rounds (`interleaved_times`, rotated
order, no warm-up call: ours is warm from the v(∅) evaluation, a refit run is hundreds of fits),
except stock_zeroed's, which runs once (`rounds` 1; `speedup_vs_refit` against the refit's median);
the process's CPU time (`time.process_time`: on a shared machine wall time mostly measures the
other jobs). `seconds`: the median per explained row (LOO: per valuation), with `seconds_min`,
`seconds_max`; `speedup_vs_refit`: the median over rounds of the refit's seconds / the method's in
the same round (`speedup_min`, `speedup_max`). Agreement with the refit: Spearman rank
correlation of the attributions per row (median over rows) and the largest absolute difference.

Modules: `explain_settings` (the settings, checked), `dataset` (one host on one dataset: every method, timed),
`refits` (the references), `explain_table` (the rows, the files), `explain_plots` (the figures);
`removal_at_scale` (with its settings `explain_scale_settings`) the same at tabpfn's default size.
"""
