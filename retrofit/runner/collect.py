"""A sweep's records: which units each job runs (its manifest) and their current rows, labelled as
this sweep labels them, read from the unit store without building a case (no torch, tabpfn,
variant registry or dataset); and the sweep's results written from them (`finish_sweep`).

A job's manifest, `<cache_dir>/jobs/<identity>.json`, written when its case is built, lists each
unit's `UnitKey`, the fingerprint its stored row must carry and the labels this job gives it
(`arm`, `arm_extra`: a stored row is shared by every sweep that runs the unit, its labels are
not), with the environment and host file digest the fingerprints were taken under. `identity`
digests the job's composed config but the keys that change no unit (`NOT_UNITS`), its group
choices and its variant nodes, so a command with the sweep's own overrides finds each manifest.
A unit is current when its stored fingerprint is the manifest's and neither the environment nor
the host file changed since (`CaseManifest.changed`); anything less is named, never aggregated.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.runner import console
from retrofit.runner.aggregate import aggregate, headline, noise_floors, outputs
from retrofit.runner.compare import Reference, verify
from retrofit.runner.compose import variant_nodes
from retrofit.runner.record import UnitRecord
from retrofit.runner.schema import jobs_dir, resolve, results_dir_of
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


def case_records(case: "Case", rows: Sequence[Mapping[str, Any]]) -> list[UnitRecord]:
    """The records of `rows` (one per unit of `case`, in order, as `run_case` returns them)."""
    return [UnitRecord.from_row(row).labelled(u.arm, u.arm_extra) for u, row in zip(case.units, rows, strict=True)]


def sweep_records(cases: Sequence["Case"]) -> list[UnitRecord]:
    """The records of every unit of `cases` from the unit store (`current_records`: RunnerError
    naming a unit without a current result)."""
    return current_records((CaseManifest.of(case), case.runs_dir) for case in cases)


def finish_sweep(config: DictConfig, records: Sequence[UnitRecord], reference: Reference | None) -> pd.DataFrame:
    """Aggregate a sweep's `records` into its `results_dir`, print the headline table and the files
    written; with a `reference` (read before the sweep), check that the new `retrofit_rmse.csv`
    reproduces it (`reproduction.txt`; RunnerError if not)."""
    results_dir = results_dir_of(config, config.hydra)
    frame = aggregate(results_dir, records)
    written = [results_dir / name for name in outputs(frame)]
    sweep_dir = resolve(Path(config.hydra.runtime.cwd), config.hydra.sweep.dir)
    console.report(headline(frame, noise_floors()), written, f"{sweep_dir}/<job>/{config.hydra.job.name}.log", [])
    if reference is not None:
        verify(results_dir, reference)
    return frame
