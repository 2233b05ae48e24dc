"""How every job starts: its config checked against its schema, where the command was started, a
CSV file its `dataset` names on the command line, its output files resolved there and checked
against the record guard, and the device it measures on resolved (`device`: "cpu", "cuda" or
"auto"; `device=cuda` without CUDA refused in one line), before any work. `retrofit.jobs.launch`
builds a job's `JobStart` (`job_start`) and hands it to the job's `run`:

    def run(job: JobStart) -> None:
        (output,) = job.outputs(job.settings.output)   # RunnerError if results/ may not be written
        job.device                                     # "cpu" or "cuda": what the job's models and tensors run on

It imports no model: the benchmark jobs measured on fitted cases add `benchmarks.fitted_cases`.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from omegaconf import DictConfig, OmegaConf

from retrofit.data.csv_file import check_csv_command
from retrofit.errors import RetrofitError, RunnerError
from retrofit.jobs import CONFIGS_DIR
from retrofit.record_guard import check_record_outputs, writable_file
from retrofit.runner import command_overrides, job_config, resolve


@dataclass(frozen=True)
class JobStart:
    """A job's checked `settings` (its schema's object, or the checked DictConfig), the directory
    the command was started in (`base_dir`, what relative paths mean), its Hydra config and the
    device it measures on (`device`, resolved: "cpu" or "cuda"; "cpu" for a job without the key)."""

    settings: Any
    base_dir: Path
    hydra_cfg: DictConfig
    device: str = "cpu"

    def outputs(self, *paths: str | Path) -> list[Path]:
        """`paths` resolved against `base_dir`; RunnerError (`retrofit.record_guard`) if any lies in
        the committed results/ and this is not its make target's run, or cannot be written as a file
        (empty, a folder, read-only: `writable_file`, naming the settings key that gave it)."""
        for path in paths:
            writable_file(path and resolve(self.base_dir, path), self._key_of(path))
        resolved = [resolve(self.base_dir, path) for path in paths]
        check_record_outputs(resolved)
        return resolved

    def _key_of(self, path: str | Path) -> str:
        """The settings key whose value is `path` (`output` if none is)."""
        values = self.settings.items() if isinstance(self.settings, DictConfig) else vars(self.settings).items()
        return next(
            (key for key, value in values if isinstance(value, str | Path) and str(value) == str(path)), "output"
        )


def job_start(module: ModuleType, cfg: DictConfig, hydra_cfg: DictConfig) -> JobStart:
    """The `JobStart` that `launch` hands to the `run` of job module `module`: `cfg` started with its
    `SCHEMA` (`start`), its settings a `SCHEMA` instance unless the module sets `AS_OBJECT = False`
    (then the checked DictConfig), refusals naming the root config Hydra composed
    (`configs/<name>.yaml`, `--config-name` included)."""
    where = f"configs/{hydra_cfg.job.config_name}.yaml"
    return start(cfg, hydra_cfg, module.SCHEMA, where, as_object=getattr(module, "AS_OBJECT", True))


def start(cfg: DictConfig, hydra_cfg: DictConfig, schema: type, where: str, *, as_object: bool = True) -> JobStart:
    """The `JobStart` of the composed root config `cfg` with `schema` (`job_config`: a key added by
    `+key=value` is refused by name); `settings` is a `schema` instance unless `as_object` is false.
    A `dataset` mapping whose CSV file the command line names has that file checked next
    (`check_csv_command`), before any model loads; a `device` key is resolved last (`job_device`)."""
    checked = job_config(cfg, schema, where)
    check_required(checked, where, hydra_cfg.runtime.choices)
    if isinstance(checked.get("dataset"), DictConfig):
        check_csv_command(checked.dataset, command_overrides(hydra_cfg), Path(hydra_cfg.runtime.cwd))
    settings = OmegaConf.to_object(checked) if as_object else checked
    device = job_device(checked.device) if "device" in checked else "cpu"
    return JobStart(settings, Path(hydra_cfg.runtime.cwd), hydra_cfg, device)


def check_required(cfg: DictConfig, where: str, choices: Mapping[str, Any] | None = None) -> None:
    """RunnerError naming the first key of the composed `cfg` (its `hydra` node aside) left `???`,
    OmegaConf's missing value (the user gives it: no default is chosen for them), with an example
    of it: the first comment line that sets it in the config that leaves it (the group option of
    `choices` a dotted key is in, e.g. `configs/host/checkpoint.yaml` for `host.path`, or the root
    config `where`). The file is named where it leaves the key to the command line, else an
    override or config file did (`device='???'`). The entry point checks this before Hydra acts,
    the job's start again on its own composition."""
    settings = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])
    missing = sorted(OmegaConf.missing_keys(settings))
    if not missing:
        return
    key = missing[0]
    group, _, name = key.rpartition(".")
    files = [(Path(where).name, key)]
    if group in (choices or {}):
        files.insert(0, (f"{group}/{choices[group]}.yaml", name))
    leaving = next((file for file, entry in files if f"{entry}: ???" in _settings_lines(file)), None)
    examples = [
        line.strip("# ").split(" # ")[0].strip()
        for file, _ in files
        for line in _lines(file)
        if line.startswith("#") and f" {key}=" in line
    ]
    example = f", e.g. `{examples[0]}`" if examples else ""
    why = f"configs/{leaving} leaves it to the command line" if leaving else "an override or config file sets it to ???"
    raise RunnerError(f"{key} is required ({why}): give {key}=<value>{example}")


def _lines(file: str) -> list[str]:
    """The lines of `configs/<file>` (none for a file the checkout's configs do not hold)."""
    path = CONFIGS_DIR / file
    return path.read_text().splitlines() if path.is_file() else []


def _settings_lines(file: str) -> list[str]:
    """The lines of `configs/<file>`, each without its comment."""
    return [line.split(" #")[0].strip() for line in _lines(file)]


def job_device(device: str) -> str:
    """A job's `device` key resolved (`retrofit.hosts.regressor.resolve_device`: "auto" is "cuda"
    where CUDA is available, else "cpu"); RunnerError, one line, for another value or for "cuda"
    without CUDA, before the job loads data or fits a model."""
    from retrofit.hosts.regressor import resolve_device

    try:
        return resolve_device(device)
    except RetrofitError as err:
        raise RunnerError(str(err)) from None
