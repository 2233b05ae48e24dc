"""The library side of the entry points in `experiments/`: one module per root config of `configs/`,
holding its schema (a dataclass) and `run(cfg, hydra_cfg)`, which does what the entry point promises
from the composed config and `HydraConfig.get()`.

Each root config lists its schema first in its defaults (`<config>_schema`), so a key the schema
lacks, or a value of the wrong type, in a config file or an override fails when the config is
composed, naming the key. An entry point stores its own root config's schema in Hydra's ConfigStore
(`register("audit")`) before Hydra composes; `SCHEMAS` imports a schema's module only when that
schema is asked for, so an entry point imports what its own job needs and no other job (importing
this package imports no job). `+key=value` adds a key Hydra leaves unchecked; each `run` (and
`retrofit.runner.schema.job_config`) refuses it before any work.
"""

from collections.abc import Iterator, Mapping
from importlib import import_module

from hydra.core.config_store import ConfigStore

_SOURCES = {
    "ablation": "retrofit.jobs.ablation:AblationConfig",
    "audit": "retrofit.jobs.audit:AuditConfig",
    "bench": "retrofit.jobs.bench:BenchConfig",
    "bench_batch": "retrofit.jobs.bench_batch:BenchBatchConfig",
    "config": "retrofit.runner.schema:SweepConfig",
    "exactness": "retrofit.jobs.exactness:ExactnessConfig",
    "explain_bench": "retrofit.jobs.explain_bench:ExplainBenchRootConfig",
    "host_quality": "retrofit.jobs.host_quality:HostQualityConfig",
    "noise_floor": "retrofit.jobs.noise_floor:NoiseFloorConfig",
    "padding_demo": "retrofit.jobs.padding_demo:PaddingDemoConfig",
    "pretrain_host": "retrofit.jobs.pretrain_host:PretrainHostConfig",
    "scale_check": "retrofit.measure.scale:ScaleConfig",
    "sink_mass": "retrofit.jobs.sink_mass:SinkMassConfig",
    "sweep_cost": "retrofit.jobs.sweep_cost:SweepCostConfig",
    "tau_sweep": "retrofit.runner.tau_sweep:TauSweepConfig",
}
"""Root config name (`configs/<name>.yaml`) -> `module:class` of its schema; `preset_selection`
reuses `host_quality`'s through its defaults."""


class _Schemas(Mapping[str, type]):
    """Root config name -> its schema class, the schema's module imported on first access."""

    def __getitem__(self, name: str) -> type:
        module, schema = _SOURCES[name].split(":")
        return getattr(import_module(module), schema)

    def __iter__(self) -> Iterator[str]:
        return iter(_SOURCES)

    def __len__(self) -> int:
        return len(_SOURCES)


SCHEMAS: Mapping[str, type] = _Schemas()
"""Root config name -> its schema (a read-only mapping; see `_SOURCES`)."""


def register(*names: str) -> None:
    """Store the schema of each root config in `names` (none given: every one) in Hydra's ConfigStore
    as `<name>_schema`, where the root configs' defaults find it."""
    for name in names or tuple(SCHEMAS):
        ConfigStore.instance().store(name=f"{name}_schema", node=SCHEMAS[name])
