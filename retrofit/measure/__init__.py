"""The operator experiments (exactness, compositional ablation, attention benchmark).

Importable cores of the thin Hydra entry points in `experiments/`; they use only `retrofit.ops`.
"""
