"""A fast, seeded, bounded synthetic regression prior for pretraining small TabPFN hosts.

`sample_batch(shape, batch_size, generator)` draws `batch_size` datasets that share one table
shape; each dataset draws its own input columns, function family and noise level.
"""

from retrofit.prior.batch import FAMILIES, PriorBatch, TableShape, sample_batch, sample_shape, zscore_targets

__all__ = ["FAMILIES", "PriorBatch", "TableShape", "sample_batch", "sample_shape", "zscore_targets"]
