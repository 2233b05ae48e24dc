"""Bad input through the library API, as a hostile user would give it: every case ends in a
RetrofitError that names the problem and the fix, before any work, never in a traceback, a
faked number or a model that fails later. Checkpoints, datasets, variants, the estimator,
`retrofit`/`unpatch`, `predict_many`. (The sweep runner's cases live with the runner's tests.)"""

import dataclasses
import json
import math
import os
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from synthetic import fit_synthetic, regression_data
from tabpfn import TabPFNRegressor
from tabpfn.architectures import ARCHITECTURES as TABPFN_ARCHITECTURES
from tabpfn.checkpoint import save_as_safetensors

import retrofit
from retrofit.adapters import ARCHITECTURES, TauRule
from retrofit.data import DatasetError, DatasetSpec, clean, load_table
from retrofit.data.prepare import check_column_names
from retrofit.errors import RetrofitError, listing
from retrofit.hosts import check_checkpoint, get_path, make_regressor
from retrofit.hosts.checkpoint import build_host, inference_config, save_host, set_borders
from retrofit.hosts.column_embeddings import pin_drawn
from retrofit.hosts.random_host import TINY_ARCHS
from retrofit.hosts.validation import _regression_head_missing
from retrofit.runner.config import case_from_hydra
from retrofit.variants import VARIANT_DIR, Variant, resolve_variant

_data = partial(regression_data, n=60, f=3, curved=False)


@pytest.fixture(scope="module")
def fitted() -> tuple[TabPFNRegressor, np.ndarray]:
    """(stock tiny_v3 regressor fitted on 40 rows, 20 test rows)."""
    return fit_synthetic(get_path("tiny_v3"), n=60, n_train=40, f=3, curved=False)


def _rewritten(tmp_path: Path, name: str, **header: str) -> Path:
    """The shipped tiny_v2 host's tensors under `name`, with header fields replaced by `header`."""
    with safe_open(str(get_path("tiny_v2")), framework="pt") as fh:
        fields, tensors = fh.metadata(), {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118
    path = tmp_path / name
    save_file(tensors, str(path), metadata={**fields, **header})
    return path


# --- checkpoints -------------------------------------------------------------------------------


@pytest.mark.parametrize("arch_name", ["tabpfn_v3", "tabpfn_v2", "tabpfn_v2_5"])
def test_classifier_checkpoint_is_refused_at_validation(tmp_path, arch_name):
    """Without the check it passed validation, fit and retrofit and failed at predict (IndexError on v3,
    a size mismatch on v2): its decoder gives max_num_classes logits, not the regression buckets."""
    model, config = build_host(arch_name, {**TINY_ARCHS[arch_name], "max_num_classes": 10})
    pin_drawn(model, 2)  # a v2-family host is written with its column embeddings (none on v3)
    criterion = set_borders(model, torch.linspace(-4.0, 4.0, config.num_buckets + 1))
    path = save_host(tmp_path / "tabpfn-v3-classifier.safetensors", model, config, arch_name, criterion, {})
    with pytest.raises(RetrofitError, match=rf"is a TabPFN classifier checkpoint \({arch_name}, max_num_classes=10\)"):
        check_checkpoint(path)
    with pytest.raises(RetrofitError, match="classifier checkpoint"):
        make_regressor(path)


def _tiny_v3_5(max_num_classes: int):
    """A tiny tabpfn v3.5 (multitask) model and its config, built by tabpfn itself."""
    module = TABPFN_ARCHITECTURES["tabpfn_v3_5"]
    config, _ = module.parse_config(
        dict(
            max_num_classes=max_num_classes,
            num_buckets=32,
            embed_dim=32,
            nlayers=2,
            icl_num_heads=4,
            dist_embed_num_heads=2,
            dist_embed_num_blocks=1,
            dist_embed_num_inducing_points=8,
            feat_agg_num_heads=2,
            feat_agg_num_blocks=1,
            decoder_num_heads=2,
            decoder_head_dim=8,
        )
    )
    return module.get_architecture(config), config


def test_multitask_v3_5_model_keeps_its_regression_head():
    """A v3.5 checkpoint backs both estimators: a classification head (max_num_classes > 0) does not
    make it classification-only, while a v3 model with the same head is."""
    model, config = _tiny_v3_5(max_num_classes=10)
    assert config.max_num_classes == 10 and not _regression_head_missing(model, config)
    v3, v3_config = build_host("tabpfn_v3", {**TINY_ARCHS["tabpfn_v3"], "max_num_classes": 10})
    assert _regression_head_missing(v3, v3_config)


@pytest.mark.skipif("tabpfn_v3_5" not in ARCHITECTURES, reason="tabpfn_v3_5 has no adapter spec registered")
def test_multitask_v3_5_checkpoint_passes_validation(tmp_path):
    model, config = _tiny_v3_5(max_num_classes=10)
    path = tmp_path / "tabpfn-v3.5-multitask.safetensors"
    checkpoint = {"state_dict": model.state_dict(), "config": dataclasses.asdict(config)}
    save_as_safetensors(
        {**checkpoint, "architecture_name": "tabpfn_v3_5", "inference_config": inference_config("lean")}, path
    )
    assert check_checkpoint(path) == path


def test_architecture_name_that_does_not_fit_the_tensors_is_refused(tmp_path):
    """tiny_v2's tensors under a tabpfn_v2_5 header: tabpfn's strict load_state_dict raised a RuntimeError at fit."""
    path = _rewritten(tmp_path, "mislabelled-v2.5.safetensors", architecture_name=json.dumps("tabpfn_v2_5"))
    with pytest.raises(RetrofitError, match=r"tensors do not fit architecture 'tabpfn_v2_5'.*missing \['add_thinking"):
        check_checkpoint(path)


def test_header_field_that_is_not_json_is_refused(tmp_path):
    path = _rewritten(tmp_path, "broken-v2.safetensors", inference_config="{not json")
    with pytest.raises(RetrofitError, match=r"header field 'inference_config' is not JSON"):
        check_checkpoint(path)


def test_config_that_does_not_build_is_refused(tmp_path):
    path = _rewritten(tmp_path, "badconfig-v2.safetensors", config=json.dumps({"emsize": "wide"}))
    with pytest.raises(RetrofitError, match=r"'config' does not build a tabpfn_v2 model"):
        check_checkpoint(path)


def test_symlink_loop_is_refused(tmp_path):
    loop = tmp_path / "loop-v3.safetensors"
    os.symlink(loop, loop)
    with pytest.raises(RetrofitError, match=r"cannot be resolved .*symlink"):
        check_checkpoint(loop)


def test_folder_without_a_checkpoint_says_what_it_holds(tmp_path):
    (tmp_path / "notes.txt").write_text("weights elsewhere")
    with pytest.raises(RetrofitError, match=r"holds no TabPFN regressor checkpoint .*it holds \['notes.txt'\]\); pass"):
        check_checkpoint(tmp_path)


def test_a_bare_number_tau_that_is_not_a_number_is_refused_on_the_command_line_in_one_line(hydra_compose):
    cfg = hydra_compose("sweep", ["variant=oa_only", "variant.tau=abc"])
    with pytest.raises(RetrofitError, match=r"^variant=oa_only: tau must be a number \(c of the calibrated rule"):
        case_from_hydra(cfg, cfg.hydra)


def test_make_regressor_does_not_take_an_unchecked_model_path(tmp_path):
    with pytest.raises(RetrofitError, match=r"drop model_path=.*and pass it as `path`"):
        make_regressor(get_path("tiny_v3"), model_path=str(tmp_path / "elsewhere-v3.ckpt"))


# --- datasets ----------------------------------------------------------------------------------


def _csv(tmp_path: Path, text: str, **spec) -> DatasetSpec:
    path = tmp_path / "table.csv"
    path.write_text(text)
    return DatasetSpec.from_mapping({"name": "toy", "source": "csv", "path": str(path), "target": "y", **spec})


def _rows(n: int = 30) -> list[str]:
    rng = np.random.default_rng(0)
    return [f"{a:.3f},{b:.3f},{b:.3f}" for a, b in rng.normal(size=(n, 2))]


def test_csv_with_a_duplicated_target_is_refused(tmp_path):
    """pandas reads `x,y,y` as x, y, y.1: the copy of the target would be a feature and leak into it."""
    spec = _csv(tmp_path, "\n".join(["x,y,y", *_rows()]))
    assert list(pd.read_csv(spec.options["path"]).columns) == ["x", "y", "y.1"]  # what would have been fitted
    with pytest.raises(DatasetError, match=r"uses column names more than once: \['y'\].*y -> y\.1"):
        load_table(spec, tmp_path)


def test_frame_with_duplicated_columns_is_refused():
    frame = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["a", "y", "a"])
    with pytest.raises(DatasetError, match=r"more than once: \['a'\]"):
        clean(frame, DatasetSpec.from_mapping({"name": "t", "source": "csv", "path": "p", "target": "y"}))


@pytest.mark.parametrize(("header", "positions"), [(",x,y", r"\[0\]"), ("x, ,y", r"\[1\]")])
def test_csv_with_an_empty_column_name_is_refused(tmp_path, header, positions):
    """A blank header cell (e.g. a CSV written with its index) would become a feature named 'Unnamed: 0'."""
    spec = _csv(tmp_path, "\n".join([header, *_rows()]))
    with pytest.raises(DatasetError, match=rf"columns without a name, at positions {positions}.*index=False"):
        load_table(spec, tmp_path)


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


def test_error_listing_a_wide_tables_columns_is_bounded(tmp_path):
    """A malformed 100,000-column CSV once produced a message of hundreds of MB; it now lists 20 names."""
    n = 100_000
    spec = _csv(tmp_path, ",".join(f"c{i}" for i in range(n)) + "\n" + ",".join(["1"] * n) + "\n")
    with pytest.raises(DatasetError, match=rf"no target column 'y'; columns: .*'c19'\] and {n - 20} more") as err:
        load_table(spec, tmp_path)
    assert len(str(err.value)) < 1_000


def test_column_name_checks_are_bounded():
    names = [f"c{i}" for i in range(500_000)] * 2
    with pytest.raises(DatasetError, match=r"and 499980 more \(500000 in all\)") as err:
        check_column_names("wide", names)
    assert len(str(err.value)) < 1_000
    assert listing(["a", "b"]) == "['a', 'b']"


# --- variants, retrofit, unpatch ---------------------------------------------------------------


@pytest.mark.parametrize("variant", [42, None, 1.5, ["full_o"]])
def test_variant_that_is_neither_name_spec_nor_file_is_refused(fitted, variant):
    with pytest.raises(RetrofitError, match=r"a variant is a built-in name .*a spec \(a mapping\), or a \.yaml"):
        retrofit.retrofit(fitted[0], variant)


def test_variant_string_that_is_a_path_is_not_loaded(fitted, tmp_path):
    """A string without .yaml is a name: neither a file nor a path into the built-in folder is read."""
    (tmp_path / "evil.yaml").write_text("name: full_o\nadapters: []\n")
    escape = os.path.relpath(tmp_path / "evil", VARIANT_DIR)
    for variant in (str(tmp_path / "evil"), escape):
        with pytest.raises(RetrofitError, match=r"unknown variant .*built-in: \["):
            retrofit.retrofit(fitted[0], variant)


def test_variant_file_is_reported_under_its_own_file_name(fitted, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text((VARIANT_DIR / "oa_only.yaml").read_text().replace("name: oa_only\n", ""))
    for given in (str(path), path):
        report = retrofit.retrofit(fitted[0], given).retrofit_report_
        assert report.variant.name == "mine.yaml" and report.variant.adapters == ("o_attention",)
        assert len(report.patched) > 0


def test_variant_file_calling_itself_a_built_in_is_refused(fitted, tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("name: full_o\nadapters: []\n")
    with pytest.raises(RetrofitError, match=r"calls itself 'full_o'.*under its file name 'evil\.yaml'.*to 'evil'"):
        retrofit.retrofit(fitted[0], str(path))
    with pytest.raises(RetrofitError, match=r"variant file .*nowhere\.yaml does not exist"):
        retrofit.retrofit(fitted[0], str(tmp_path / "nowhere.yaml"))


@pytest.mark.parametrize("eps_den", [math.inf, -math.inf, math.nan, 0.0, -1e-6])
def test_eps_den_must_be_finite_and_positive_wherever_it_enters(fitted, eps_den):
    """A non-finite or non-positive eps_den is refused where it enters: retrofit, the estimator, a spec, a Variant
    (an infinite one once ran and was recorded as a result)."""
    message = r"eps_den must be a finite number > 0"
    with pytest.raises(RetrofitError, match=message):
        retrofit.retrofit(fitted[0], "full_o", eps_den=eps_den)
    with pytest.raises(RetrofitError, match=message):
        resolve_variant({"adapters": ["o_attention"], "tau": {"mode": "calibrated", "c": 1e-3}, "eps_den": eps_den})
    with pytest.raises(RetrofitError, match=message):
        retrofit.RetrofitRegressor("oa_only", eps_den=eps_den, n_estimators=1, device="cpu").fit(*_data())
    with pytest.raises(RetrofitError, match=message):
        Variant("direct", ("o_attention",), TauRule("calibrated", c=1e-3), eps_den, False, "absolute")


@pytest.mark.parametrize(
    "tau",
    [
        {"mode": "absolute", "value": math.inf},
        {"mode": "absolute", "value": math.nan},
        {"mode": "calibrated", "c": math.inf},
    ],
)
def test_tau_must_be_finite_at_retrofit_not_at_predict(fitted, tau):
    with pytest.raises(RetrofitError, match=r"needs tau\.(value|c) > 0 and finite"):
        retrofit.retrofit(fitted[0], "full_o", tau=tau)


def test_unpatch_of_an_unfitted_regressor_is_refused():
    with pytest.raises(RetrofitError, match=r"unpatch needs a fitted TabPFNRegressor: this one is not fitted"):
        retrofit.unpatch(make_regressor(get_path("tiny_v3")))
    with pytest.raises(RetrofitError, match=r"unpatch needs a fitted tabpfn.TabPFNRegressor, got RetrofitRegressor"):
        retrofit.unpatch(retrofit.RetrofitRegressor())


def test_o_closed_on_a_constant_target_predicts_the_constant_like_stock_tabpfn():
    """Stock tabpfn predicts a constant target without running a model; so does every variant."""
    X, _ = _data()
    stock = make_regressor(get_path("tiny_v3"), n_estimators=1).fit(X[:40], np.full(40, 2.5))
    expected = stock.predict(X[40:])
    np.testing.assert_array_equal(expected, np.full(20, 2.5))
    for variant in ("baseline", "full_o", "o_closed"):
        patched = retrofit.retrofit(stock, variant)
        np.testing.assert_array_equal(patched.predict(X[40:]), expected)
    assert patched.retrofit_report_.closed
    np.testing.assert_array_equal(retrofit.predict_many([(patched, X[40:])])[0], expected)
    restored = retrofit.unpatch(patched)
    assert type(restored) is TabPFNRegressor and not any(type(m).__name__.startswith("O") for m in restored.models_)


# --- the estimator and predict_many ------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_estimators": 0}, r"n_estimators must be an integer in \[1, 10000\]"),
        ({"n_estimators": 2.5}, r"n_estimators must be an integer in \[1, 10000\]"),
        ({"n_estimators": True}, r"n_estimators must be an integer in \[1, 10000\]"),
        ({"n_estimators": 10**6}, r"n_estimators must be an integer in \[1, 10000\] .*got 1000000"),
        ({"random_state": -1}, r"random_state must be None, an integer >= 0"),
        ({"random_state": "seed"}, r"random_state must be None, an integer >= 0"),
    ],
)
def test_estimator_refuses_bad_parameters_before_fitting(params, message):
    """n_estimators=0 used to fit and then fail at predict with an IndexError."""
    estimator = retrofit.RetrofitRegressor("oa_only", device="cpu", **{"n_estimators": 1, **params})
    with pytest.raises(RetrofitError, match=message):
        estimator.fit(*_data())
    assert not hasattr(estimator, "regressor_")


def _sparse(X, y):
    import scipy.sparse

    return scipy.sparse.csr_matrix(X), y


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (_sparse, r"RetrofitRegressor.fit: Sparse data was passed for X, but dense data is required"),
        (lambda X, y: (X[:1], y[:1]), r"RetrofitRegressor.fit: Found array with 1 sample\(s\) .* a minimum of 2"),
        (lambda X, y: (np.ones_like(X), y), r"RetrofitRegressor.fit: All features are constant"),
    ],
    ids=["scipy-sparse", "one-row", "constant-features"],
)
def test_estimator_refuses_unfittable_inputs_in_one_line(inputs, message):
    """Sparse X, a single row and all-constant features used to end in sklearn's TypeError or tabpfn's
    TabPFNValidationError, which an entry point shows as a traceback."""
    estimator = retrofit.RetrofitRegressor("oa_only", n_estimators=1)
    with pytest.raises(RetrofitError, match=message):
        estimator.fit(*inputs(*_data()))
    assert not hasattr(estimator, "regressor_")


def test_compare_refuses_a_table_whose_features_are_all_constant():
    """tabpfn refuses a table it would reduce to no feature (TabPFNValidationError); the split names it first."""
    X, y = _data()
    with pytest.raises(DatasetError, match=r"every feature is constant on the training rows of seed 0"):
        retrofit.compare(np.full_like(X, 3.0), y, variants=["oa_only"], n_estimators=1)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"variants": []}, r"variants is empty, so compare would return no row"),
        ({"seeds": []}, r"seeds is empty, so compare would return no row"),
        ({"seeds": [0, 1, 0]}, r"seeds \[0, 1, 0\] repeat a seed"),
    ],
    ids=["no-variant", "no-seed", "repeated-seed"],
)
def test_compare_refuses_lists_that_would_drop_or_repeat_rows(arguments, message):
    """An empty list returned an empty frame in silence; a repeated seed fitted the same split twice."""
    with pytest.raises(RetrofitError, match=message):
        retrofit.compare(*_data(), **{"variants": ["oa_only"], "n_estimators": 1, **arguments})


def test_compare_and_the_estimator_refuse_inputs_that_are_no_table_or_no_numbers():
    X, y = _data()
    with pytest.raises(RetrofitError, match=r"X must be a table \(rows × features\), got 3 dimensions"):
        retrofit.compare(X[:, :, None], y, variants=["oa_only"], n_estimators=1)
    with pytest.raises(
        RetrofitError, match=r"RetrofitRegressor.fit: y must be numbers \(a regression target\), got text"
    ):
        retrofit.RetrofitRegressor("oa_only", n_estimators=1).fit(X, y.astype(str))


def test_compare_bounds_its_members_as_the_sweep_does():
    """retrofit.compare(n_estimators=10**6) used to start an unbounded fit; the sweep refuses the same
    number (one bound, `MAX_MEMBERS`, in `make_regressor`)."""
    X, y = _data()
    with pytest.raises(RetrofitError, match=r"n_estimators must be an integer in \[1, 10000\]"):
        retrofit.compare(X, y, variants=["oa_only"], n_estimators=10**6)


@pytest.mark.parametrize("seeds", [[-1], [0, 2**32], [0.5], [True]])
def test_compare_refuses_a_seed_numpy_cannot_take_before_fitting(seeds):
    """seeds=[-1] used to end in sklearn's own InvalidParameterError, after the first seeds' fits."""
    X, y = _data()
    with pytest.raises(RetrofitError, match=rf"seed {seeds[-1]!r} must be an integer in \[0, 4294967295\]"):
        retrofit.compare(X, y, variants=["oa_only"], seeds=seeds)


def test_predict_many_given_a_bare_regressor_says_it_wants_pairs(fitted):
    patched, X_test = retrofit.retrofit(fitted[0], "o_closed"), fitted[1]
    with pytest.raises(RetrofitError, match=r"item 0 is a PatchedTabPFNRegressor, not a \(regressor, X_test\) pair"):
        retrofit.predict_many([patched])
    with pytest.raises(RetrofitError, match=r"item 0 is a PatchedTabPFNRegressor"):
        retrofit.predict_many((patched, X_test))
    with pytest.raises(RetrofitError, match=r"pair 0 starts with a ndarray, not a fitted regressor"):
        retrofit.predict_many([(X_test, patched)])
    assert retrofit.predict_many([(patched, X_test)])[0].shape == (20,)


def test_a_named_link_replaced_by_other_bytes_is_made_again(tmp_path, monkeypatch):
    """The named-link cache used to serve whatever file sat at `<sha256>/<name>`: weights replaced
    there (perturbed, NaN) were loaded under the original file's digest. A link that no longer holds
    the digested bytes is made again before tabpfn reads it."""
    from retrofit.hosts.links import tabpfn_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    blob = tmp_path / "blob"
    blob.write_bytes(get_path("tiny_v3").read_bytes())
    named = tmp_path / "tiny.safetensors"
    named.symlink_to(blob)
    link = tabpfn_path(named)
    assert link.samefile(blob)
    link.unlink()
    link.write_bytes(get_path("tiny_v2").read_bytes())  # other bytes under the same digest folder
    assert tabpfn_path(named) == link and link.read_bytes() == blob.read_bytes()
    link.unlink()
    link.write_bytes(blob.read_bytes())  # a copy of the right bytes is kept
    inode = link.stat().st_ino
    assert tabpfn_path(named) == link and link.stat().st_ino == inode
