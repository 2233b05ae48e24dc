"""Every architecture at tabpfn's default size: what the retrofit costs and whether it closes.

Per architecture (`make scale-check` -> `results/scale.csv`, columns `scale_rows.COLUMNS`): a host at
tabpfn's default architecture config with random weights
(`retrofit.hosts.random_host.default_size_host`), stored as tabpfn publishes that version,
validated as the sweep's `host=checkpoint` is (`retrofit.hosts.check_checkpoint`, then
`make_regressor`). On a synthetic table (`scale_settings`) it measures, for the stock model (`baseline`)
and each variant:
- `time_ratio` (min, max): patched / stock predict seconds, per round of interleaved rounds after
  a warm-up (`predict_timing`);
- `memory_ratio`: the peak growth of resident memory during one patched predict / during one stock
  predict, each in its own fresh process (on CUDA: of the allocator's memory, in this process;
  `memory_probe`);
- `clone_memory_ratio`: the resident memory that holding one more retrofit of the variant adds,
  divided by the model's weight bytes (parameters and buffers) (`memory_probe`);
- `audit_rows_rel`, `audit_columns_rel`: the largest relative prediction change when absent train
  rows / feature columns are inserted at the model's input (`scale_audit`, on a smaller table);
and one `variant=predict_many` row (`predict_many`): `retrofit.predict_many` over o_closed
retrofits of tables of different shapes vs one `predict` after another (`time_ratio` =
predict_many / sequential), with `max_rel_diff` its largest difference from `predict` relative
to the prediction scale, and `batched_tables` how many of the tables it runs in padded shared
forwards (`retrofit.batching.shared_buckets`, a function of the shapes and the model).
`ops_per_predict`, `ops_ratio`: the torch operations one predict dispatches and their ratio to
the stock model's (`ops_per_predict`, counted by `benchmarks.tools.op_count`; the same on every device, so a
CPU run holds what bounds a GPU's kernel launches); one `variant=o_closed_memory_saving` row
(`memory_saving`): o_closed's peak predict memory over the stock model's with tabpfn's memory
saving forced on and its chunked inference in chunks of `memory_saving_chunk_cells` cells, on
`memory_saving_table`, and its largest difference from the unchunked o_closed prediction.
`device` (`configs/scale_check.yaml`: cpu, cuda or auto) says where it all runs: on CUDA every
call is synchronised, memory is the allocator's peak and the timed tables are `cuda_sizes`;
every row names its device and table (`n_train`, `n_test`, `n_features`).
`load_start`, `load_end`: the machine's 1-minute load average when the architecture's
measurements began and ended (other jobs share the cores; ratios are paired per round, but a
loaded machine widens their spread). `scale_table` runs it all; `verdicts` states each ratio against
its goal; where a variant misses its time goal, `profiles` says where the extra time goes: the ops
whose CPU time grew most from stock to patched, in one predict each. What cannot run is a
`status=refused` row with the reason, never a number.
"""
