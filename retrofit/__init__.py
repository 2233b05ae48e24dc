"""O-closed token dynamics retrofitted into frozen TabPFN regressors.

Shape legend, for the whole package: a tensor's name ends in one letter per axis (`x_BRE` is
(batch, rows, embedding)), as in tabpfn's own architectures. The first meaning of a letter is the
model's; where a module uses a letter otherwise, the entry names that module.
  B  batch: the tables one forward runs (ensemble members, coalitions, prior tables); the K + 1
     bucket borders in `metrics` (`borders_B`)
  R  rows of a table, the N train rows first
  N  train (context) rows, tabpfn's `single_eval_pos`; the present queries compact attention
     gathers (`ops.attention`); the scored points (`metrics`); the draws (`results.bootstrap`)
  T  test rows, as the readout lays them out (`logits_TBO`); the tokens of a row in tabpfn_v3's
     column aggregator (CLS tokens + C); the entries of a column-embedding table
     (`hosts.column_embeddings`)
  C  columns: a table's features as the model sees them
  F  features of a raw table (prior, checkpoints, coalitions); a layer's output width (`x_xF`);
     the frequencies of a rotary embedding
  E  embedding width of a carrier
  D  head dim; a row's carrier width after tabpfn_v3's column aggregator (CLS tokens x E); the
     datasets drawn (`results.bootstrap`)
  H  query heads
  G  key/value heads (GQA/MQA: H % G == 0); the columns of a token's group (tabpfn_v3's feature
     grouping); the groups of batch elements with equal present counts (`ops.attention`)
  Q  queries
  K  keys; the buckets of the output distribution (`logits_NK`, `logits_TBK`); coalitions
     (`removal`, `explanation`); latent factors (`prior`)
  M  the present keys compact attention gathers (`ops.attention`)
  S  a sequence (the queries of a slice of rows, a rotary embedding's positions); the present
     columns of a coalition (`removal.context`); the values of a cluster (`results.bootstrap`)
  L  tokens of a sequence (`ops`); CLS tokens (tabpfn_v3's column aggregator); the items an
     insertion keeps (`ops.insertion`, `audit`); a tree's leaves, a category's levels (`prior`)
  I  inducing points (tabpfn_v3's distribution embedder); inner buckets (`metrics`)
  U  tokens after feature grouping (U = C unless given); distinct values or groups
  O  outputs of the readout (the logits' buckets)
  P  present (coalition, column) pairs (`removal.context`)
  W  width of a hidden layer or an embedding table (`prior`, `hosts.column_embeddings`)
  X  any number of carriers or values flattened into one axis (tau's context carriers, the sink
     diagnostics' records)
  1  an axis of size 1, for broadcasting; in `borders_K1` (`hosts.checkpoint`) the K + 1 bucket
     borders
  2  an axis of size 2: a pair (`counts_B2` in `ops.attention`)
A lower-case letter is an axis derived from an upper-case one:
  b  the batch folded with another axis (B x columns or B x rows: `x_bTE`); some of the tables
     (`prior`); the batch, broadcast (`bias_bhQK`)
  c  the columns folded into the batch (`x_BcRE` is (B x C, R, E))
  g  some of the G key/value heads (`k_BgND`); a group of batch elements
  h  the heads, broadcast (`bias_bhQK`)
  i  tabpfn's `Ri` (input rows), in names tabpfn gives its arguments
  k  a chunk of the K coalitions (`removal.context`)
  n  the rows of a prior table; the present train rows of a group of batch elements; the train
     rows among a chunk of rows (`label_BnUE` in `adapters.tabpfn_v3`)
  r  a chunk of the R rows (`x_BrUE` in `adapters.tabpfn_v3`)
  t  tokens with all leading axes flattened (`x_tE`); some of the T test rows
  x  any leading axes (`h_xE`, `p_x`): (B, R, x) is B, R and any further axes

`retrofit.retrofit(regressor, variant, **hparams)` patches a frozen clone and
`retrofit.unpatch(patched)` restores it (both in `retrofit.patching`);
`retrofit.RetrofitRegressor` is a variant on a host as a scikit-learn estimator
(`retrofit.estimator`); `retrofit.predict_many(pairs)` predicts several o_closed regressors' tables
in padded batches (`retrofit.batching`); `retrofit.compare(X, y, variants=[...])` runs the
sweep's matched comparison on a table in memory and returns its rows (`retrofit.comparison`);
`retrofit.explain(X, y, rows=[...])` splits rows' predictions among their features by removal in
an o_closed host (`retrofit.explanation`); `retrofit.make_regressor(path)` is the stock TabPFNRegressor
on a host file that everything here fits (`retrofit.hosts.make_regressor`).
They are resolved on first access, so `import retrofit.ops` does not pay for importing tabpfn.
"""

from retrofit.lazy import lazy_attributes

_LAZY = {
    "retrofit": "retrofit.patching",
    "unpatch": "retrofit.patching",
    "RetrofitRegressor": "retrofit.estimator",
    "predict_many": "retrofit.batching",
    "compare": "retrofit.comparison",
    "explain": "retrofit.explanation",
    "make_regressor": "retrofit.hosts.regressor",
}
"""Public name -> the module defining it, imported on first access."""

__all__ = ["RetrofitRegressor", "compare", "explain", "make_regressor", "predict_many", "retrofit", "unpatch"]


__getattr__ = lazy_attributes(__name__, _LAZY)
