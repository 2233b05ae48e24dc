"""`retrofit.data.spec.DatasetSpec`: a dataset YAML means what it says. Its keys, its name (the file's stem,
a label), its drop and categorical lists, its OpenML id and its relative CSV path; each malformed case
is refused in one line."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from refusals import one_line

from retrofit.data import DatasetError, DatasetSpec, load_table


def test_drop_naming_the_target_is_refused():
    raw = {"name": "t", "source": "csv", "path": "p", "target": "y", "drop": ["id", "y"]}
    with pytest.raises(DatasetError, match=r"drop lists the target 'y'"):
        DatasetSpec.from_mapping(raw)


@pytest.mark.parametrize("bad", ["abc", 1.5, True, -3, 0, "", "5x"])
def test_openml_id_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(DatasetError, match=r"OpenML id must be a positive integer|needs \['id'\]"):
        DatasetSpec.from_mapping({"name": "t", "source": "openml", "id": bad, "target": "y"})


def test_openml_id_given_as_digits_is_the_integer():
    assert DatasetSpec.from_mapping({"name": "t", "source": "openml", "id": "561", "target": "y"}).options["id"] == 561


def test_dataset_name_longer_than_a_label_is_refused():
    raw = {"name": "d" * 240, "source": "sklearn", "loader": "load_diabetes", "target": "target"}
    with pytest.raises(DatasetError, match="has 240 characters") as err:
        DatasetSpec.from_mapping(raw)
    one_line(err)


def _yaml(folder: Path, stem: str, **raw) -> Path:
    path = folder / f"{stem}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _spec_of(path: Path) -> DatasetSpec:
    return DatasetSpec.from_mapping(yaml.safe_load(path.read_text()), yaml_file=path)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"max_rows": True}, "max_rows must be a positive integer or null, got True"),
        ({"path": 5, "source": "csv", "loader": None}, "path must be text, got 5"),
        ({"target": True}, "target must be text, got True"),
        ({"targt": "y"}, "unknown key 'targt' for source 'sklearn' (did you mean 'target'?"),
        ({"categorical": ["target"]}, "categorical lists the target 'target'"),
        ({"drop": ["age"], "categorical": ["age"]}, "['age'] are both dropped and categorical"),
    ],
    ids=["max_rows-bool", "path-int", "target-bool", "misspelt-key", "categorical-target", "drop-and-categorical"],
)
def test_malformed_dataset_yaml_is_one_line(tmp_path, extra, message):
    raw = {"name": "d", "source": "sklearn", "loader": "load_diabetes", "target": "target", **extra}
    raw = {key: value for key, value in raw.items() if value is not None}
    with pytest.raises(DatasetError) as err:
        _spec_of(_yaml(tmp_path, "d", **raw))
    assert message in one_line(err)


def test_dataset_name_must_be_the_files_stem(tmp_path):
    path = _yaml(tmp_path, "houses", name="flats", source="sklearn", loader="load_diabetes", target="target")
    with pytest.raises(DatasetError, match=r"rename the file to flats\.yaml or set name: houses") as err:
        _spec_of(path)
    one_line(err)


def test_relative_csv_path_is_read_from_the_yamls_folder(tmp_path, monkeypatch):
    folder = tmp_path / "conf"
    (folder / "data").mkdir(parents=True)
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.normal(size=30), "y": rng.normal(size=30)}).to_csv(folder / "data" / "t.csv", index=False)
    spec = _spec_of(_yaml(folder, "t", name="t", source="csv", path="data/t.csv", target="y"))
    monkeypatch.chdir(tmp_path)  # neither the start directory nor base_dir holds data/t.csv
    assert spec.options["path"] == str(folder / "data" / "t.csv")
    assert load_table(spec, tmp_path).X.shape == (30, 1)


def test_a_sweep_reads_a_yamls_relative_csv_path_from_its_folder_and_checks_its_name(
    hydra_compose, tmp_path, monkeypatch
):
    """In a run, a relative `path` written in a dataset YAML on the search path is read from that
    YAML's folder, and the YAML's stem must be its name; a `dataset.path=` given on the command line
    is read from the start directory."""
    from retrofit.runner.sweep_config import BUILTIN_SEARCHPATH, dataset_file, dataset_spec

    folder = tmp_path / "conf" / "dataset"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.normal(size=30), "y": rng.normal(size=30)}).to_csv(folder / "t.csv", index=False)
    (folder / "t.yaml").write_text("name: t\nsource: csv\npath: t.csv\ntarget: y\n")
    (folder / "u.yaml").write_text("name: other\nsource: csv\npath: t.csv\ntarget: y\n")
    monkeypatch.chdir(tmp_path)  # the start directory holds no t.csv
    searchpath = f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path / 'conf'}]"

    def spec(*overrides):
        cfg = hydra_compose("sweep", [searchpath, *overrides])
        return dataset_spec(cfg.dataset, dataset_file(cfg.hydra, cfg.hydra.runtime.choices.dataset))

    assert spec("dataset=t").options["path"] == str(folder / "t.csv")
    assert load_table(spec("dataset=t"), tmp_path).X.shape == (30, 1)
    with pytest.raises(DatasetError, match=r"rename the file to other\.yaml or set name: u") as err:
        spec("dataset=u")
    one_line(err)
    assert spec("dataset=t", "dataset.path=data/t.csv").options["path"] == "data/t.csv"  # from the start directory


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"name": "a", "source": "excel", "target": "y"}, "unknown source 'excel'"),
        ({"name": "../a", "source": "csv", "path": "p", "target": "y"}, "'../a' labels results and names files"),
        ({"name": "a", "source": "csv", "target": "y"}, "key 'path' is missing"),
        ({"name": "a", "source": "csv", "path": "p", "target": "y", "colour": 1}, "unknown key 'colour'"),
        ({"name": "a", "source": "csv", "path": "p"}, "key 'target' is missing"),
        ({"name": "a", "source": "csv", "path": "p", "target": "y", "max_rows": 0}, "max_rows must be a positive"),
        (
            {"name": "a", "source": "csv", "path": "p", "target": "y", "drop": "id"},
            r"drop must be a list of column names, got the one name 'id'; give a list even of one: \['id'\]$",
        ),
        ({"name": "a", "source": "csv", "path": "p", "target": "y", "categorical": [1]}, "categorical must be a list"),
    ],
)
def test_bad_specs_raise_a_clear_error(raw, message):
    with pytest.raises(DatasetError, match=message):
        DatasetSpec.from_mapping(raw)
