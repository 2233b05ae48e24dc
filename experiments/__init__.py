"""The experiments: this folder is the table of jobs, one module per job.

`experiments/<name>.py` is job `<name>`, started by `python experiments/<name>.py [key=value ...]`,
`python -m retrofit <name> ...` or `retrofit <name> ...` (all three through `retrofit.jobs.launch`).
Its root config is `configs/<name>.yaml`, unless the module sets `CONFIG = "<other>"` to run another
job's root config with Hydra overrides of its own (`OVERRIDES`, as `aggregate` runs the sweep's).
The module defines

    SCHEMA = NameConfig   # a dataclass: the root config's keys and types (here or in a light module)

    def run(job: JobStart) -> None: ...   # the job, from its started config (retrofit.jobs.start)

    if __name__ == "__main__":
        launch("<name>")  # from retrofit.jobs import launch

`launch` starts the job before calling `run`: its composed config checked against `SCHEMA` (a key
added by `+key=value` refused naming the root config), a CSV file its `dataset` names on the command
line checked, its output paths' base directory and its `device` resolved. `job.settings` is a
`SCHEMA` instance, or the checked DictConfig where the module sets `AS_OBJECT = False`;
`job.hydra_cfg` is Hydra's config of the run (its mode, choices, search path, output folder).

The module imports at its top only what `SCHEMA` needs (and `JobStart`): torch, tabpfn, sklearn,
pandas, shapiq, and the modules importing them, are imported inside `run` (or the helper using
them), so that importing an experiment is cheap and a config error is answered before the models
load. What an experiment
measures with lives in `benchmarks/` or `retrofit/`; nothing there imports this package (`make lint`
checks it): `launch` imports a job by its name.
"""
