"""O-closed token dynamics retrofitted into frozen TabPFN regressors.

`retrofit.retrofit(regressor, variant, **hparams)` patches a frozen clone and
`retrofit.unpatch(patched)` restores it (both in `retrofit.patching`). They are resolved on
first access, so `import retrofit.ops` does not pay for importing tabpfn.
"""

__all__ = ["retrofit", "unpatch"]


def __getattr__(name: str):
    if name in __all__:
        from retrofit import patching

        return getattr(patching, name)
    raise AttributeError(f"module 'retrofit' has no attribute {name!r}")
