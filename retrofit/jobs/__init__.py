"""The library side of the entry points in `experiments/`: one module per root config of `configs/`,
holding its schema (a dataclass) and `run(cfg, hydra_cfg)`, which does what the entry point promises
from the composed config and `HydraConfig.get()`.

Importing this package registers every root config's schema in Hydra's ConfigStore under
`<config>_schema` (`SCHEMAS`); each root config lists its schema first in its defaults, so a key
the schema lacks, or a value of the wrong type, in a config file or an override fails when the
config is composed, naming the key. `+key=value` adds a key Hydra leaves unchecked; each `run` (and
`retrofit.runner.config.job_config`) refuses it before any work.
"""

from hydra.core.config_store import ConfigStore

from retrofit.jobs.ablation import AblationConfig
from retrofit.jobs.audit import AuditConfig
from retrofit.jobs.bench import BenchConfig
from retrofit.jobs.bench_batch import BenchBatchConfig
from retrofit.jobs.exactness import ExactnessConfig
from retrofit.jobs.explain_bench import ExplainBenchRootConfig
from retrofit.jobs.host_quality import HostQualityConfig
from retrofit.jobs.padding_demo import PaddingDemoConfig
from retrofit.jobs.pretrain_host import PretrainHostConfig
from retrofit.jobs.sink_mass import SinkMassConfig
from retrofit.measure.scale import ScaleConfig
from retrofit.runner.config import SweepConfig
from retrofit.runner.tau_sweep import TauSweepConfig

SCHEMAS: dict[str, type] = {
    "ablation": AblationConfig,
    "audit": AuditConfig,
    "bench": BenchConfig,
    "bench_batch": BenchBatchConfig,
    "config": SweepConfig,
    "exactness": ExactnessConfig,
    "explain_bench": ExplainBenchRootConfig,
    "host_quality": HostQualityConfig,
    "padding_demo": PaddingDemoConfig,
    "pretrain_host": PretrainHostConfig,
    "scale_check": ScaleConfig,
    "sink_mass": SinkMassConfig,
    "tau_sweep": TauSweepConfig,
}
"""Root config name (`configs/<name>.yaml`) -> its schema; `preset_selection` reuses `host_quality`'s
through its defaults."""

for _name, _schema in SCHEMAS.items():
    ConfigStore.instance().store(name=f"{_name}_schema", node=_schema)
