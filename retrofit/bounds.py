"""How much one command may take on, checked before any work: a command given more refuses in one
line, naming the bound and what to do, instead of running for hours or filling memory.

Each bound is kept here once and imported where it is checked: `MAX_JOBS` (the jobs of one
multirun, `retrofit.runner.sweep_jobs`, and the seeds of one `retrofit.compare` call), `max_work`
(the table one fit takes, `fit_work`: `retrofit.data.prepare.check_work` for a dataset,
`check_fit_work` for `retrofit.RetrofitRegressor`, `check_total_work` for the tables of one
`retrofit.predict_many`), `MAX_COLUMNS` and `MAX_HEADER_CHARS` (a CSV file's header,
`retrofit.data.csv_file.header`); `MAX_CONFIG_VALUES` (a YAML config file's values, its aliases
expanded: `check_yaml_values`); `check_max_cells` checks the memory bound a caller of
`retrofit.predict_many` or `retrofit.removal` gives (cells per forward).
"""

import os
from collections.abc import Sequence
from numbers import Integral
from typing import Any

from retrofit.errors import RetrofitError

MAX_JOBS = 1000
"""The most jobs one multirun launches and the most seeds one `retrofit.compare` call runs. A
multirun's jobs are each composed (a fifth of a second or so) and checked before the first runs, so
a larger grid would spend minutes before anything is said; each seed of `compare` is one fit, and a
generator may have no end, so neither is started unasked."""
MAX_WORK = 2 * 10**9
"""The most work (`max_work`) one fit may take, by default: fitted rows × rows × feature columns.
TabPFN attends from every row to every fitted row in each feature column, so a fit's time grows
with this product: 2e9 is about a table at tabpfn's 10,000-row pretraining limit with 30 features
split 70/30 (7,000 × 10,000 × 30 = 2.1e9), ten times the largest table of the suite (nmes1988:
3,084 × 4,406 × 14 = 1.9e8)."""
MAX_COLUMNS = 10_000
"""The most columns a CSV file's header may name: five times the 2,000 features of tabpfn's widest
pretraining limit (v2.5). pandas parses a header of any width, a million columns for a minute."""
MAX_HEADER_CHARS = 100 * MAX_COLUMNS
"""The most characters of a CSV file's header that are read (a hundred a column name): a longer
header is refused before pandas sees the file."""
MAX_CONFIG_VALUES = 100_000
"""The most values (mappings, lists and scalars) one YAML config file may hold once its aliases
(`*name`) are expanded: a config of this project holds a few hundred. Each alias of a list of
aliases repeats the list, so a page of them (a "billion laughs" file) expands to billions of values,
which OmegaConf copies one by one, for hours, before anything is said."""
WORK_ENV = "RETROFIT_MAX_WORK"
"""The environment variable that raises (or lowers) `MAX_WORK`: a number, e.g. 5e9."""


def max_work() -> int:
    """The bound on one fit's work: `WORK_ENV` when set (a positive number), else `MAX_WORK`;
    RetrofitError naming the variable for a value that is not a positive number."""
    given = os.environ.get(WORK_ENV)
    if given is None:
        return MAX_WORK
    try:
        bound = float(given)
    except ValueError:
        bound = float("nan")
    if not bound >= 1 or bound == float("inf"):  # NaN fails the comparison
        raise RetrofitError(f"{WORK_ENV}={given!r} must be a positive number of work units, e.g. {WORK_ENV}=5e9")
    return int(bound)


def fit_work(n_fitted: int, n_rows: int, n_features: int) -> int:
    """The work (`MAX_WORK`'s unit) of predicting `n_rows` rows (the fitted ones included, as a fit
    on a dataset's rows does) from `n_fitted` fitted rows with `n_features` feature columns: each row
    attends to every fitted row in each column, in every ensemble member alike."""
    return n_fitted * n_rows * n_features


def check_fit_work(n_fitted: int, n_rows: int, n_features: int, what: str) -> None:
    """RetrofitError, one line starting with `what`, when `fit_work` of these sizes is over
    `max_work`, naming the estimate, the bound and what shortens it."""
    work, bound = fit_work(n_fitted, n_rows, n_features), max_work()
    if work > bound:
        raise RetrofitError(
            f"{what}: {n_fitted} fitted rows × {n_rows} rows × {n_features} features is {work:.2g} units of work, "
            f"over the bound of {bound:.2g} ({WORK_ENV}); fit on fewer rows, predict fewer rows per call, "
            f"drop features, or raise the bound: {WORK_ENV}={work}"
        )


def check_total_work(sizes: Sequence[tuple[int, int, int]], what: str) -> None:
    """RetrofitError, one line starting with `what`, when the `fit_work` of the (fitted rows, rows,
    features) `sizes`, summed (one call predicting several tables), is over `max_work`."""
    work, bound = sum(fit_work(*size) for size in sizes), max_work()
    if work > bound:
        raise RetrofitError(
            f"{what}: {len(sizes)} tables are {work:.2g} units of work (fitted rows × rows × features, summed), "
            f"over the bound of {bound:.2g} ({WORK_ENV}); predict fewer or smaller tables per call, "
            f"or raise the bound: {WORK_ENV}={work}"
        )


def check_max_cells(max_cells: Any) -> None:
    """RetrofitError unless `max_cells`, the most cells one forward holds, is an int >= 1."""
    if isinstance(max_cells, bool) or not isinstance(max_cells, Integral) or max_cells < 1:
        raise RetrofitError(f"max_cells must be an int >= 1 (cells per forward), got {max_cells!r}")


def check_yaml_values(text: str, where: str) -> None:
    """RetrofitError naming `where` (the file) when the YAML `text` holds more than
    `MAX_CONFIG_VALUES` values once its aliases are expanded, or an alias inside its own anchor
    (a value that holds itself). Counted on the YAML's node graph, where an alias is one node
    however often it repeats; text that is no YAML is left to the loader that reads it."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return
    counted: dict[int, int] = {}

    def values(node: yaml.Node, within: frozenset[int]) -> int:
        if id(node) in within:
            raise RetrofitError(f"{where}: an alias (*name) lies inside its own anchor (&name); write the value out")
        if id(node) not in counted:
            children = node.value if isinstance(node, yaml.SequenceNode) else []
            if isinstance(node, yaml.MappingNode):
                children = [child for pair in node.value for child in pair]
            inner = within | {id(node)}
            counted[id(node)] = min(1 + sum(values(child, inner) for child in children), MAX_CONFIG_VALUES + 1)
        return counted[id(node)]

    if root is not None and values(root, frozenset()) > MAX_CONFIG_VALUES:
        raise RetrofitError(
            f"{where} holds more than {MAX_CONFIG_VALUES} values once its aliases (*name) are expanded, "
            "as a YAML file that repeats aliases of aliases does; write the values out, or repeat fewer"
        )
