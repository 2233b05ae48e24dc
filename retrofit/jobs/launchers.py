"""What a launcher's config may say: its settings are data, never shell text, and it runs each job once.

The submitit SLURM launcher writes its config into the sbatch script it submits: `setup` as shell
lines, as they are, and every other field as a `#SBATCH --<key>=<value>` line (the value quoted by
submitit, the key of an `additional_parameters` entry not), so a setup line, a value holding a line
break (which ends the `#SBATCH` line; the rest of the value runs as shell) or a key that is not an
option name runs code. `check_launcher` refuses these, and for either submitit launcher more than
one task or node (each task runs the whole job again, a job being one process), and for the joblib
launcher more worker processes than this machine has CPUs. The other fields are data the launchers
hand on as such: submitit's partition, timeout_min, cpus_per_task, mem_gb, gres, account,
additional_parameters' option values (quoted); joblib's backend (a name in joblib's registry),
pre_dispatch (joblib's own arithmetic evaluator), temp_folder (`retrofit.jobs.preflight` checks it
as a folder Hydra writes). The basic launcher and Hydra's basic sweeper take no text that runs:
the sweeper's `params` are overrides, each job composed and checked (`retrofit.jobs.preflight`).
"""

import os
import re
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from retrofit.errors import RunnerError
from retrofit.jobs.exits import reason

BASIC = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
JOBLIB = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
SUBMITIT_LOCAL = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"
SLURM = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
"""The launchers a run may use (`hydra/launcher=basic`, `joblib`, `submitit_local`, `submitit_slurm` or `slurm`)."""
SHELL_LINES = {SLURM: ("setup",)}
"""The keys of a launcher's config whose value is shell lines it runs."""
SCRIPTED = (SLURM,)
"""The launchers that write their config's text into a shell script."""
ONE_TASK = {SUBMITIT_LOCAL: ("tasks_per_node", "nodes"), SLURM: ("tasks_per_node", "nodes")}
"""The keys that make a launcher run each job more than once, where they take 1."""
OPTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""An sbatch option's name, as an `additional_parameters` key gives it."""


def check_launcher(launcher: DictConfig) -> None:
    """RunnerError, one line naming the key and the fix, for a setting of the composed
    `hydra.launcher` node that runs code or runs a job more than once (the module docstring)."""
    target = launcher.get("_target_")
    for key in SHELL_LINES.get(target, ()):
        if launcher.get(key):
            raise RunnerError(
                f"hydra.launcher.{key}: shell lines a config writes into the job script run as code; set the "
                "environment up (module load, source .venv/bin/activate, export) in the shell that starts the "
                "sweep, which sbatch hands to each job, and drop it"
            )
    if target in SCRIPTED:
        try:
            _check_script_text(OmegaConf.to_container(launcher, resolve=True))
        except OmegaConfBaseException as err:
            raise RunnerError(f"hydra.launcher does not resolve ({reason(err)}); give its values plainly") from None
    for key in ONE_TASK.get(target, ()):
        if launcher.get(key) != 1:
            raise RunnerError(
                f"hydra.launcher.{key}={launcher.get(key)}: each task would run the whole job again (a job is one "
                f"process); leave {key} at 1 and give a job more CPUs with hydra.launcher.cpus_per_task"
            )
    cpus = os.cpu_count() or 1
    if target == JOBLIB and launcher.n_jobs > cpus:
        raise RunnerError(
            f"hydra.launcher.n_jobs={launcher.n_jobs}: more worker processes than this machine's {cpus} CPUs; "
            f"give at most {cpus} (-1 is all of them)"
        )


def _check_script_text(node: Any, key: str = "hydra.launcher") -> None:
    """RunnerError for a string of the plain container `node` (a launcher config that becomes
    `#SBATCH` lines) holding a line break or another control character, or for an
    `additional_parameters` key that is not an option name."""
    if isinstance(node, str) and any(ord(char) < 32 or ord(char) == 127 for char in node):
        raise RunnerError(
            f"{key}={node!r}: a control character such as a line break ends the job script's #SBATCH line and "
            "the rest runs as shell; give the value on one line"
        )
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for name, value in items:
        if key.endswith(".additional_parameters") and not OPTION_NAME.fullmatch(str(name)):
            raise RunnerError(
                f"{key}: {name!r} is not an sbatch option name (letters, digits, - and _), and sbatch writes it "
                "unquoted into the job script; give the option's name, e.g. mail-user"
            )
        _check_script_text(value, f"{key}.{name}")
