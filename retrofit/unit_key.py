"""What a unit is called: the key of the unit store (`retrofit.runner.store`) and of every results row.

A unit is one variant (with its hyper-parameter overrides) of one case (host × dataset × seed).
Its key is the columns `KEY` of `retrofit_rmse.csv`, its overrides written as sorted, flattened
`k=v,...` text (`hparams_text`), and shown to people as `label`. The store names and checks its
files by this key, and `retrofit.results` reads and compares rows by it: it lives below both, so
that the records and the store can only name a unit one way. `VARIANT_ORDER` is the order in which
the results list the variants.
"""

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

KEY = ["host", "dataset", "seed", "variant", "hparams"]
"""The columns that identify a unit."""
VARIANT_ORDER = ("baseline", "oa_only", "full_o", "o_closed")
"""The built-in variants (`retrofit/configs/variant/`) in the order every table, plot and the README list
them: the stock host, then by how much of the host each closes; a variant of one's own follows them."""


def variant_rank(variant: str) -> tuple[int, str]:
    """Where `variant` sorts: its place in `VARIANT_ORDER`, one not listed after them by name."""
    return (VARIANT_ORDER.index(variant), "") if variant in VARIANT_ORDER else (len(VARIANT_ORDER), variant)


class UnitKey(NamedTuple):
    """What a unit is called: the key columns of its row (`KEY`); `hparams` its overrides as
    `k=v,...` (`hparams_text`)."""

    host: str
    dataset: str
    seed: int
    variant: str
    hparams: str = ""

    def label(self) -> str:
        """`host=<h>/dataset=<d>/seed=<s>/variant=<v>[/hparams=<k=v,...>]`."""
        return label(self)


def label(key: tuple) -> str:
    """A unit key as `host=h/dataset=d/seed=0/variant=v[/hparams=...]`."""
    return "/".join(f"{name}={value}" for name, value in zip(KEY, key, strict=True) if value != "")


def hparams_text(hparams: Mapping[str, Any] | str | None, prefix: str = "") -> str:
    """A unit's hyper-parameter overrides as sorted, flattened `k=v,...` (`tau.c=0.01,tau.mode=...`);
    text as it is, and None, NaN or "" (a blank cell) as ""."""
    if not isinstance(hparams, Mapping):
        blank = hparams is None or (isinstance(hparams, float) and math.isnan(hparams)) or hparams == ""
        return "" if blank else str(hparams)
    items = []
    for name, value in hparams.items():
        items += (
            [hparams_text(value, f"{prefix}{name}.")] if isinstance(value, Mapping) else [f"{prefix}{name}={value}"]
        )
    return ",".join(sorted(item for part in items for item in part.split(",") if item))


def key_of(row: Mapping[str, Any]) -> UnitKey:
    """The `UnitKey` a row's own key columns name."""
    return UnitKey(
        str(row["host"]), str(row["dataset"]), int(row["seed"]), str(row["variant"]), hparams_text(row["hparams"])
    )
