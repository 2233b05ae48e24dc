"""`retrofit.explain`: the explanation of rows of a table in memory (X and y, or a DataFrame and its
target column), cleaned as a dataset is and handed to `explain_table`; with `out_dir`, written to
the explain job's files (`retrofit.explanation.files`)."""

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from retrofit.comparison import TARGET, feature_frame
from retrofit.data import frame_table
from retrofit.explanation.files import checked_files, write_explanation
from retrofit.explanation.settings import DEFAULTS, HOST, ExplainSettings
from retrofit.explanation.table import explain_table
from retrofit.hosts import host_file


def explain(
    X: Any,
    y: Any,
    *,
    rows: Iterable[int] = tuple(DEFAULTS.rows),
    order: int = DEFAULTS.order,
    budget: int | None = DEFAULTS.budget,
    max_seconds: float = DEFAULTS.max_seconds,
    host: str | os.PathLike = HOST,
    n_estimators: int = DEFAULTS.n_estimators,
    seed: int = DEFAULTS.seed,
    categorical: Sequence[str] = (),
    device: str = DEFAULTS.device,
    threads: int | None = DEFAULTS.threads,
    say: Callable[[str], None] = print,
    progress: bool = True,
    out_dir: str | os.PathLike | None = None,
    name: str = "frame",
) -> pd.DataFrame:
    """One row per explained row × feature (and pair, with order=2): `COLUMNS`.

    X, y: the features (a DataFrame, or an array whose columns become x0, x1, ...) and the target;
        or a DataFrame holding both and the name of its target column as `y` (as `retrofit.compare`).
    rows, order, budget, max_seconds, n_estimators, seed, device, threads: the `ExplainSettings`,
        whose defaults (`DEFAULTS`) are the explain job's (`configs/explain.yaml`).
    host: an o_closed-capable host (tabpfn_v3 or v3.5): a shipped host name, a tabpfn model name or
        a checkpoint (`retrofit.hosts.check_checkpoint`).
    categorical: numeric columns that are categories (text columns always are).
    say: where the plan and the estimate go (before the work); progress: a bar over the coalitions.
    out_dir: None writes nothing; a folder gets the explain job's files, `<name>_explanation.csv`
        (the frame returned) and `<name>_explanation.png` (a bar chart per row), checked writable
        (and outside the committed results/) before the fit. name: the table's label in them.
    Raises DatasetError / RetrofitError naming the fix, before any fit where it can be known then.
    """
    target = y if isinstance(y, str) else TARGET
    table = frame_table(feature_frame(X, y), target, name=name, categorical=categorical)
    files = None if out_dir is None else checked_files(out_dir, name)
    host_path = host_file(host)
    settings = ExplainSettings(
        rows=list(rows),
        order=order,
        budget=budget,
        max_seconds=max_seconds,
        n_estimators=n_estimators,
        seed=seed,
        device=device,
        threads=threads,
    )
    frame = explain_table(table, host_path, settings, say=say, progress=progress)
    if files is not None:
        write_explanation(frame, files, name, Path(host_path), settings)
        say("\n".join(f"wrote {path}" for path in files))
    return frame
