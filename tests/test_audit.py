"""`experiments/audit.py` end to end: a user checkpoint and random hosts audited, bad host entries
refused with the fix, a default-size v3.5 closed from the raw table (slow)."""

import re

import pandas as pd
import pytest
from processes import run_entry_point

from retrofit.audit import REL_BOUND


def _run_audit(cwd, *overrides):
    small = ["n_null=[1]", "n_estimators=1", "insertions=[{at: icl_entry, kind: rows}]"]
    return run_entry_point("audit.py", *small, *overrides, cwd=cwd)


@pytest.mark.slow
def test_audit_driver_takes_a_user_checkpoint_and_random_hosts(tmp_path, make_random_host):
    """`host=checkpoint host.path=...` audits that checkpoint under `host.name`, with the random
    hosts of `random_hosts` (v3.5 included, o_closed measured on it); a path in `hosts`, a bad random-host entry and
    `host` together with `hosts` are refused with the fix."""
    path = make_random_host("tabpfn_v3_5")
    run = _run_audit(
        tmp_path,
        "host=checkpoint",
        f"host.path={path}",
        "host.name=mine",
        "random_hosts=[{arch: tabpfn_v3_5, seed: 1}]",
        f"output={tmp_path}/audit.csv",
    )
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "audit.csv")
    assert set(table.host) == {"mine", "random_tabpfn_v3_5_seed1"}
    full_o = table[table.variant.str.startswith("full_o")]
    assert len(full_o) == 2 * 2 * 2 and (full_o.linf_hidden <= REL_BOUND * full_o.max_abs_hidden).all()
    assert set(table[table.variant.str.startswith("o_closed")].status) == {"measured"}
    refusals = {
        f"hosts=[{path}]": "use host=checkpoint host.path=",
        "random_hosts=[{arch: tabpfn_v9, seed: 0}]": r"must be \{arch: <one of \[",
        "random_hosts=[{arch: tabpfn_v3, seed: 0, size: huge}]": r"size: <one of \['tiny', 'default'\], default tiny>",
        "hosts=[tiny_v3]": "pass either host=<name>",
    }
    for override, message in refusals.items():
        extra = ("host=checkpoint", f"host.path={path}") if override == "hosts=[tiny_v3]" else ()
        run = _run_audit(tmp_path, *extra, override)
        assert run.returncode == 1 and re.search(message, run.stderr), run.stderr


@pytest.mark.slow  # builds tabpfn_v3_5 at its default size (random weights) and refits the others per insertion
def test_a_default_size_v3_5_is_closed_from_the_raw_table(tmp_path):
    """`random_hosts` with `size: default`: tabpfn's default v3.5, stored as tabpfn publishes it;
    absent rows and columns inserted into the raw table move o_closed by rounding only (0 with
    `compact`), the stock host by far more."""
    run = _run_audit(
        tmp_path,
        "hosts=[]",
        "random_hosts=[{arch: tabpfn_v3_5, seed: 0, size: default}]",
        "insertions=[{at: raw_table, kind: rows}, {at: raw_table, kind: columns}]",
        *(f"~variants.{name}" for name in ("oa_only", "full_o", "full_o_compact")),  # not asserted on here
        f"output={tmp_path}/audit.csv",
    )
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "audit.csv")
    assert set(table.host) == {"default_size_tabpfn_v3_5_seed0"} and (table.status == "measured").all()
    assert set(table.variant) == {"baseline", "o_closed", "o_closed_compact"}
    rel = (table.linf_pred / table.max_abs_pred).groupby(table.variant).max()
    assert rel["o_closed"] <= REL_BOUND and rel["o_closed_compact"] == 0 and rel["baseline"] > 1e-3
