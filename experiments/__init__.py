"""The experiments: one module per job, started by its name.

`experiments/<name>.py` is job `<name>`: its root config is `configs/<name>.yaml`; the module
defines `SCHEMA` (that config's dataclass, defined there or imported from a module as light) and
`run(cfg: DictConfig, hydra_cfg: DictConfig) -> None`, importing what is heavy (torch, tabpfn,
sklearn, pandas, shapiq, or a module importing them) inside `run` or the helper that uses it, so
importing the module stays cheap; it ends with

    if __name__ == "__main__":
        launch("<name>")

(`retrofit.jobs.launch`), so `python experiments/<name>.py [overrides]` and `python -m retrofit
<name>` start it the same way. What an experiment measures with lives in `benchmarks/` or
`retrofit/`; the library never imports this package (`make lint` checks it).
"""
