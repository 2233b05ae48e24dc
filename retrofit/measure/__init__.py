"""Measurements: the importable cores of the thin Hydra entry points in `experiments/`.

On the operators alone (`retrofit.ops`, no tabpfn): exactness, the compositional ablation, the
attention benchmark. On retrofitted hosts (fitted through `retrofit.fitting`): the host quality
bar, the padding demo, the batch benchmark and the scale check. `inputs` draws the random
OAttention inputs the operator measurements share; `timing` and `memory` are the shared
interleaved-timing and memory probes. Null tokens are inserted by `retrofit.ops.insertion`.
"""
