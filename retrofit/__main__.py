"""`retrofit <job> [overrides]` (the console script) and `python -m retrofit <job> [overrides]`: a job
as its `experiments/` entry point runs it (`retrofit.jobs.launch`); alone, either lists every job
with one line saying what it does, and the root configs of `configs/` that another job runs."""

import re
import sys

import yaml

from retrofit.jobs import CONFIGS_DIR, job_configs, job_module, job_names, launch

ASIDE = re.compile(r"\s*\([^()]*`[^()]*\)")
"""A parenthesised aside naming code or files (`configs/x.yaml`), left out of a job's one line."""


def about(job: str) -> str:
    """What job `job` does, in one line: the first sentence of its module's docstring (the module is
    imported: it is cheap by contract), without its asides naming code or files."""
    first = " ".join((job_module(job).__doc__ or "").split("\n\n")[0].split())
    return ASIDE.sub("", first).split(": ")[0].rstrip(".")


def other_configs() -> dict[str, str]:
    """Root config -> the command that runs it, for each root config of `configs/` that no job
    runs as its own: the job of the root config it extends (a plain name in its defaults list) with `--config-name`."""
    jobs = job_configs()
    commands = {}
    for path in sorted(CONFIGS_DIR.glob("*.yaml")):
        if path.stem in jobs:
            continue
        defaults = yaml.safe_load(path.read_text()).get("defaults", [])
        extended = [entry for entry in defaults if isinstance(entry, str) and entry in jobs]
        commands[path.stem] = f"retrofit {jobs[extended[0]]} --config-name {path.stem}" if extended else "(no job)"
    return commands


def listing() -> str:
    """Every job with its one line (`about`), then the root configs another job runs (`other_configs`)."""
    width = max(map(len, [*job_names(), *other_configs()])) + 2
    lines = ["usage: retrofit <job> [--help] [-m] [-v] [key=value ...]   (the same: python -m retrofit <job> ...)"]
    lines += ["jobs:"] + [f"  {job:<{width}}{about(job)}" for job in job_names()]
    lines += ["root configs run by another job:"] + [f"  {c:<{width}}{cmd}" for c, cmd in other_configs().items()]
    return "\n".join(lines)


def main() -> None:
    """The console script `retrofit` (`[project.scripts]`): `retrofit <job> [overrides]` runs the job,
    `retrofit` alone (or with a flag first) prints `listing`."""
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(listing())
    else:
        launch(sys.argv.pop(1))


if __name__ == "__main__":
    main()
