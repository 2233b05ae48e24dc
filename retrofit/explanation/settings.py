"""The knobs of an explanation and their defaults, one record for both entry points:
`retrofit.explain` takes its keyword defaults from `DEFAULTS`, and the explain job's schema
(`experiments.explain.ExplainConfig`) extends `ExplainSettings`, whose values `configs/explain.yaml`
writes out (a test holds the two equal). Importing it imports no model."""

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

EXACT_SECONDS = 60.0
"""`budget=None` enumerates every coalition while the estimate says it takes under this many seconds
(`max_seconds` by default)."""
HOST = "tiny_v3"
"""The host explained on by default: an o_closed-capable shipped host (the job's `host` option)."""


@dataclass
class ExplainSettings:
    """What an explanation computes and how it runs (each key's role: `configs/explain.yaml`).

    rows: positions of the rows to explain (0-based, after rows without a target go), sharing one
        fitted context. order: 1 (Shapley values) or 2 (and pairwise interactions, k-SII).
    budget: None enumerates every coalition (refused, naming the time, where the estimate is over
        `max_seconds`); an int is the coalitions per row for shapiq's approximator, at least the
        estimate's unknowns (`retrofit.removal.game.min_budget`; refused below).
    n_estimators: the host's ensemble members. seed: tabpfn's random_state. device: cpu | cuda | auto.
    threads: torch's CPU threads while it runs (None: as they are; 1 avoids the oversubscription
        that slows the forwards by an order of magnitude where other processes share the CPU).
    """

    rows: list[int] = field(default_factory=lambda: [0])
    order: int = 1
    budget: int | None = None
    max_seconds: float = EXACT_SECONDS
    n_estimators: int = 8
    seed: int = 0
    device: str = "cpu"
    threads: int | None = 1

    @classmethod
    def of(cls, mapping: Mapping[str, Any]) -> "ExplainSettings":
        """The settings among `mapping`'s keys (a job's config holds others too: the dataset, the host)."""
        return cls(**{knob.name: mapping[knob.name] for knob in fields(cls)})


DEFAULTS = ExplainSettings()
"""The defaults of `retrofit.explain` and of the explain job."""
