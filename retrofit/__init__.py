"""O-closed token dynamics retrofitted into frozen TabPFN regressors."""
