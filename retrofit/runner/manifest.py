"""Which units each job of a sweep runs, written when the job's case is built, so that its results
can be read back from the unit store without building the case again (no torch, tabpfn, variant
registry or dataset loaded).

A job's manifest, `<cache_dir>/jobs/<identity>.json` (`retrofit.runner.schema.jobs_dir`), lists
every unit of its case: its `UnitKey`, the fingerprint its stored result must carry
(`retrofit.runner.case.Case.fingerprints`) and the labels the job gives it (`arm`, `arm_extra`);
and what those fingerprints were taken under: the environment (`retrofit.runner.units.environment`:
the tabpfn and torch versions and the package's code digest) and the host file's digest.

`identity` is a digest of the job's composed config as far as it decides the units: every key but
those that only say where results go or how they are run, shown or checked (`NOT_UNITS`), the
config group choices and the variant nodes the job runs (so a variant file edited since gives
another identity). A command with the sweep's own overrides, whatever `results_dir` or `reference`
it adds, finds each job's manifest; a stored result is current when its fingerprint is the
manifest's and the environment and host file are as they were (`CaseManifest.changed`).
"""

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.runner.compose import variant_nodes
from retrofit.runner.record import UnitRecord
from retrofit.runner.schema import jobs_dir
from retrofit.runner.units import UnitKey, UnitStore, code_digest, environment, file_digest, fingerprint

if TYPE_CHECKING:  # a manifest is written from a case, read without one
    from retrofit.runner.case import Case

NOT_UNITS = (
    "results_dir",
    "cache_dir",
    "reference",
    "reference_commit",
    "record",
    "grid_changed",
    "overwrite",
    "timing",
    "log_level",
)
"""The keys of `configs/config.yaml` that change neither which units a job runs nor their results:
where results and the store go, the reproduction check, recomputing finished units, the interleaved
timing (not part of a unit's fingerprint) and the console's level."""


@dataclass(frozen=True)
class ManifestUnit:
    """One unit of a job: its key, the fingerprint of its current result and its labels."""

    key: UnitKey
    stamp: str
    arm: str = ""
    arm_extra: bool = False


@dataclass(frozen=True)
class CaseManifest:
    """The units of one job's case and what their fingerprints were taken under (module docstring)."""

    units: tuple[ManifestUnit, ...]
    environment: dict[str, str]
    host_file: str
    host_digest: str

    @classmethod
    def of(cls, case: "Case") -> "CaseManifest":
        """The manifest of `case` now (its units' fingerprints, the environment, its host file)."""
        stamps = case.fingerprints()
        units = tuple(ManifestUnit(case.key(u), stamps[case.key(u)], u.arm, u.arm_extra) for u in case.units)
        return cls(units, environment(), str(case.host_path), file_digest(case.host_path))

    def write(self, path: Path) -> Path:
        """This manifest as JSON at `path`, atomically."""
        return write_text_atomic(path, json.dumps(asdict(self), indent=1, sort_keys=True) + "\n")

    @classmethod
    def read(cls, path: Path) -> "CaseManifest":
        """The manifest at `path`; RunnerError naming the file when it is not one."""
        try:
            raw = json.loads(Path(path).read_text())
            units = tuple(
                ManifestUnit(_key(unit["key"]), unit["stamp"], unit["arm"], unit["arm_extra"]) for unit in raw["units"]
            )
            return cls(units, dict(raw["environment"]), raw["host_file"], raw["host_digest"])
        except (ValueError, KeyError, TypeError) as err:
            raise RunnerError(f"{path} is not a job manifest ({err!r}); delete it and rerun the sweep") from None

    def changed(self) -> str | None:
        """Why the fingerprints of this manifest are no longer those of current results (the code, a
        library version or the host file changed since), or None."""
        code_digest.cache_clear()  # as the code is now, not as this process first read it
        now = environment()
        moved = [
            f"{name} {self.environment.get(name)} -> {now[name]}"
            for name in now
            if self.environment.get(name) != now[name]
        ]
        if moved:
            return f"changed since the sweep started: {', '.join(moved)}"
        host = Path(self.host_file)
        if not host.is_file() or file_digest(host) != self.host_digest:
            return f"the host file {host} changed since the sweep started"
        return None


def _key(raw: dict[str, Any]) -> UnitKey:
    """A `UnitKey` from its JSON form (`hparams` as [name, value] pairs)."""
    return UnitKey(**{**raw, "hparams": tuple(tuple(pair) for pair in raw["hparams"])})


def identity(cfg: DictConfig, hydra_cfg: DictConfig) -> str:
    """The digest that names the manifest of the job composed as `cfg` with `hydra_cfg` (module
    docstring): its keys but `NOT_UNITS`, as written, its group choices and its variant nodes."""
    keys = {key: value for key, value in OmegaConf.to_container(cfg).items() if key not in (*NOT_UNITS, "hydra")}
    choices = {group: choice for group, choice in hydra_cfg.runtime.choices.items() if not group.startswith("hydra")}
    variants = {name: OmegaConf.to_container(node) for name, node in variant_nodes(cfg, hydra_cfg).items()}
    return fingerprint({"keys": keys, "choices": choices, "variants": variants})


def manifest_path(cfg: DictConfig, hydra_cfg: DictConfig) -> Path:
    """Where the manifest of the job `cfg` / `hydra_cfg` lives (`identity`)."""
    return jobs_dir(cfg, Path(hydra_cfg.runtime.cwd)) / f"{identity(cfg, hydra_cfg)}.json"


def record_job(cfg: DictConfig, hydra_cfg: DictConfig, case: "Case") -> CaseManifest:
    """Write the manifest of the job `cfg` / `hydra_cfg`, whose case is `case`; return it."""
    manifest = CaseManifest.of(case)
    manifest.write(manifest_path(cfg, hydra_cfg))
    return manifest


def job_manifests(jobs: Sequence[tuple[DictConfig, DictConfig]]) -> list[CaseManifest]:
    """The manifest of each job (`cfg`, `hydra_cfg`); RunnerError naming a job that has none, and
    the fix."""
    paths = [(manifest_path(cfg, hydra_cfg), hydra_cfg) for cfg, hydra_cfg in jobs]
    absent = [hydra_cfg for path, hydra_cfg in paths if not path.is_file()]
    if absent:
        overrides = " ".join(absent[0].overrides.task) or "(no overrides)"
        raise RunnerError(
            f"{len(absent)} of the {len(jobs)} jobs of this command match no sweep started on "
            f"{paths[0][0].parent} (each sweep job leaves a manifest there when it starts), e.g. the job "
            f"{overrides}: pass the sweep's own overrides (only {', '.join(NOT_UNITS)} may differ) or run the "
            "sweep (it skips finished units)"
        )
    return [CaseManifest.read(path) for path, _ in paths]


def current_records(manifests: Iterable[tuple[CaseManifest, Path]]) -> list[UnitRecord]:
    """The records of every unit of each (manifest, unit store directory), labelled as the manifest
    labels them; RunnerError naming a unit without a current result (missing, or with another
    fingerprint, or under a changed environment or host file), so nothing partial is aggregated as
    if complete."""
    records, missing, why = [], [], ""
    for manifest, runs_dir in manifests:
        changed = manifest.changed()
        store = UnitStore(runs_dir)
        rows = {unit: None if changed else store.finished(unit.key, unit.stamp) for unit in manifest.units}
        missing += [str(unit.key.relpath()) for unit, row in rows.items() if row is None]
        why = why or (f" ({changed})" if changed else "")
        records += [UnitRecord.from_row(row).labelled(u.arm, u.arm_extra) for u, row in rows.items() if row]
    if missing:
        raise RunnerError(
            f"{len(missing)} units of this sweep have no current result, e.g. {missing[0]}{why}; rerun the sweep"
        )
    return records
