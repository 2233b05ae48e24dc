"""O-closure audit of the retrofitted hosts -> results/audit.csv (`make audit`).

python experiments/audit.py                                          # configs/audit.yaml: its `hosts`
python experiments/audit.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real   # one checkpoint
python experiments/audit.py 'random_hosts=[{arch: tabpfn_v3_5, seed: 0}]'
"""

import logging
import tempfile
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from retrofit.audit import Insertion, audit_table
from retrofit.audit.run import audit_summary
from retrofit.errors import RunnerError, exit_on_user_error
from retrofit.hosts import get_path
from retrofit.hosts.random_host import TINY_ARCHS, random_host
from retrofit.runner.config import dataset_specs, host_path, resolve
from retrofit.runner.guard import check_record_outputs


def audited_hosts(cfg: DictConfig, base_dir: Path, folder: Path) -> dict[str, Path]:
    """Label -> checkpoint of every host to audit: `host` (a shipped host or `host=checkpoint`) when
    set, else the shipped hosts of `hosts`; plus a random host per `random_hosts` entry, in `folder`."""
    if cfg.get("host") is None:
        hosts = {str(name): get_path(str(name)) for name in cfg.hosts}
    else:
        listed = [o for o in HydraConfig.get().overrides.task if o.split("=", 1)[0].lstrip("+~") == "hosts"]
        if listed:
            raise RunnerError(
                f"host={cfg.host.name} audits that one host, but {listed[0]!r} lists others too; pass either "
                "host=<name> (or host=checkpoint host.path=...) or hosts=[...], not both"
            )
        hosts = {str(cfg.host.name): host_path(cfg, base_dir)}
    for entry in cfg.random_hosts:
        entry = OmegaConf.to_container(entry) if OmegaConf.is_config(entry) else entry
        if not isinstance(entry, dict) or set(entry) != {"arch", "seed"} or entry["arch"] not in TINY_ARCHS:
            raise RunnerError(
                f"random_hosts entry {entry!r} must be {{arch: <one of {sorted(TINY_ARCHS)}>, seed: <int>}}"
            )
        hosts[f"random_{entry['arch']}_seed{entry['seed']}"] = random_host(entry["arch"], folder, int(entry["seed"]))
    return hosts


@hydra.main(version_base="1.3", config_path="../configs", config_name="audit")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    base_dir = Path(HydraConfig.get().runtime.cwd)
    output = resolve(base_dir, cfg.output)
    with exit_on_user_error():
        check_record_outputs([output], HydraConfig.get().overrides.task)
    with exit_on_user_error(), tempfile.TemporaryDirectory() as folder:
        table = audit_table(
            audited_hosts(cfg, base_dir, Path(folder)),
            OmegaConf.to_container(cfg.variants),
            list(cfg.n_null),
            dataset=dataset_specs(HydraConfig.get(), [cfg.dataset])[0],
            base_dir=base_dir,
            n_estimators=cfg.n_estimators,
            random_state=cfg.random_state,
            seed=cfg.seed,
            insertions=tuple(Insertion(**entry) for entry in cfg.insertions),
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print("largest relative prediction change (linf_pred / max_abs_pred), over null counts:")
    print(audit_summary(table).to_string())
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
