"""What several benchmarks share: resident-memory probes (`resident_memory`) and random OAttention inputs
(`attention_inputs`). Side-by-side timing is the library's (`retrofit.measure.timing`): the sweep
times its variants with it too."""
