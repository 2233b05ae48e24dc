"""`python -m retrofit <job> [overrides]`: a job as its `experiments/` entry point runs it
(`retrofit.jobs.launch`); `python -m retrofit` alone lists the root configs of `configs/` and the
job that runs each."""

import sys

import yaml

from retrofit.jobs import CONFIGS_DIR, declared_configs, job_names, launch


def command(config: str) -> str:
    """The command that runs root config `config`: its job's (declared, or named like it), the job
    of the root config it extends (a plain name in its defaults list) with `--config-name`, else
    its own entry point (`experiments/<its hydra.job.name>.py`)."""
    node = yaml.safe_load((CONFIGS_DIR / f"{config}.yaml").read_text())
    jobs = declared_configs()
    if config in jobs or config in job_names():
        return f"python -m retrofit {jobs.get(config, config)}"
    extended = [entry for entry in node.get("defaults", []) if isinstance(entry, str) and entry in jobs]
    if extended:
        return f"python -m retrofit {jobs[extended[0]]} --config-name {config}"
    return f"python experiments/{node.get('hydra', {}).get('job', {}).get('name', config)}.py"


def listing() -> str:
    """Each root config of `configs/` and the command that runs it."""
    lines = ["usage: python -m retrofit <job> [--help] [-m] [key=value ...]; the root configs of configs/:"]
    lines += [f"  {path.stem:<17} {command(path.stem)}" for path in sorted(CONFIGS_DIR.glob("*.yaml"))]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(listing())
    else:
        launch(sys.argv.pop(1))
