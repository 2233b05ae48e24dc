"""`retrofit.explain`: the explanation of rows of a table in memory (X and y, or a DataFrame and its
target column), cleaned as a dataset is and handed to `explain_table`."""

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

from retrofit.comparison import TARGET, feature_frame
from retrofit.data import frame_table
from retrofit.explanation.plan import EXACT_SECONDS
from retrofit.explanation.table import explain_table
from retrofit.hosts import available, check_checkpoint, get_path


def explain(
    X: Any,
    y: Any,
    *,
    rows: Iterable[int] = (0,),
    order: int = 1,
    budget: int | None = None,
    max_seconds: float = EXACT_SECONDS,
    host: str | os.PathLike = "tiny_v3",
    n_estimators: int = 8,
    seed: int = 0,
    categorical: Sequence[str] = (),
    device: str = "cpu",
    threads: int | None = None,
    say: Callable[[str], None] = print,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per explained row × feature (and pair, with order=2): `COLUMNS`.

    X, y: the features (a DataFrame, or an array whose columns become x0, x1, ...) and the target;
        or a DataFrame holding both and the name of its target column as `y` (as `retrofit.compare`).
    rows: positions of the rows to explain in the table (0-based, after rows without a target go).
    order: 1 (Shapley values) or 2 (Shapley values and pairwise interactions, k-SII).
    budget: None enumerates every coalition (refused, naming the time, where the estimate is over
        `max_seconds`); an int is the coalitions per row for shapiq's approximator.
    host: an o_closed-capable host (tabpfn_v3 or v3.5): a shipped host name, a tabpfn model name or
        a checkpoint (`retrofit.hosts.check_checkpoint`). seed: tabpfn's random_state.
    categorical: numeric columns that are categories (text columns always are).
    threads: torch's CPU threads while it runs (None: as they are; on a shared machine 1 avoids
        oversubscription, which slows the forwards by an order of magnitude).
    say: where the plan and the estimate go (before the work); progress: a bar over the coalitions.
    Raises DatasetError / RetrofitError naming the fix, before any fit where it can be known then.
    """
    table = frame_table(feature_frame(X, y), y if isinstance(y, str) else TARGET, categorical=categorical)
    host_path = get_path(host) if host in available() else check_checkpoint(host)
    return explain_table(
        table,
        rows=rows,
        order=order,
        budget=budget,
        max_seconds=max_seconds,
        host_path=host_path,
        n_estimators=n_estimators,
        seed=seed,
        device=device,
        threads=threads,
        say=say,
        progress=progress,
    )
