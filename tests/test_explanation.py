"""`retrofit.explain` and the explain job: Shapley values of a table's rows by removal in an o_closed
host, the plan said before the work, and one-line refusals. Shipped tiny hosts, one member."""

import inspect
import logging
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from processes import run_python
from refusals import one_line
from synthetic import diabetes_split, houses, regression_data

import retrofit
import retrofit.removal
from retrofit.errors import RetrofitError
from retrofit.explanation import COLUMNS, DEFAULTS, ExplainSettings
from retrofit.hosts import get_path, make_regressor
from retrofit.record_guard import RECORD_DIR

SMALL = dict(n_estimators=1, threads=1, progress=False)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    X, y = regression_data(n=40, f=3)
    return pd.DataFrame(X, columns=["rooms", "area", "age"]).assign(price=y)


def test_values_are_the_removal_games_shapley_values_and_add_up(frame):
    said: list[str] = []
    out = retrofit.explain(frame, "price", rows=[0, 7], say=said.append, **SMALL)
    assert list(out.columns) == list(COLUMNS) and len(out) == 2 * 3 and set(out.order) == {1}
    assert said[0].startswith("Shapley values of 2 row(s) over 3 features: 8 coalitions (exact")
    assert "about" in said[1]  # the estimate, after the plan and before the values
    X, y = frame.drop(columns="price").to_numpy(), frame.price.to_numpy()
    fixed = make_regressor(get_path("tiny_v3"), n_estimators=1, inference_config={"FEATURE_SHIFT_METHOD": None})
    closed = retrofit.retrofit(fixed.fit(X, y), "o_closed")
    phi = retrofit.removal.shapley(closed, X[[0, 7]])
    scale = float(np.std(y))
    assert np.abs(out.value.to_numpy().reshape(2, 3) - phi).max() < 1e-5 * scale
    per_row = out.groupby("row").agg(total=("value", "sum"), p=("prediction", "first"), e=("empty_prediction", "first"))
    assert np.allclose(per_row.total, per_row.p - per_row.e, atol=1e-5 * scale)
    assert np.allclose(per_row.p, closed.predict(X[[0, 7]]), atol=1e-5 * scale)


def test_order_two_adds_every_pair_and_still_adds_up(frame):
    out = retrofit.explain(frame, "price", rows=[3], order=2, say=lambda _: None, **SMALL)
    pairs = out[out.order == 2]
    assert list(pairs.features) == ["rooms × area", "rooms × age", "area × age"]
    first = out.iloc[0]
    assert out.value.sum() == pytest.approx(first.prediction - first.empty_prediction, abs=1e-5 * frame.price.std())


def test_a_budget_runs_shapiqs_approximator_and_says_so(frame):
    said: list[str] = []
    out = retrofit.explain(frame, "price", rows=[1], budget=6, say=said.append, **SMALL)
    assert "6 coalitions (shapiq KernelSHAP, budget)" in said[0] and len(out) == 3


def test_the_functions_defaults_are_the_explain_jobs_config(hydra_compose):
    """`retrofit.explain` and `retrofit explain` run alike unless told otherwise: threads=1 included."""
    job = hydra_compose("explain")
    knobs = [knob.name for knob in fields(ExplainSettings)]
    signature = inspect.signature(retrofit.explain).parameters
    function = {knob: signature[knob].default for knob in knobs} | {"rows": list(signature["rows"].default)}
    assert function == {knob: job[knob] for knob in knobs} == vars(DEFAULTS)
    assert function["threads"] == 1 and signature["host"].default == job.host.name == "tiny_v3"


def test_out_dir_gets_the_jobs_csv_and_bar_chart_and_nothing_is_written_without_it(frame, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    out = retrofit.explain(frame, "price", rows=[2, 9], say=said.append, out_dir="out", name="houses", **SMALL)
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [
        "houses_explanation.csv",
        "houses_explanation.png",
    ]
    written = pd.read_csv(tmp_path / "out" / "houses_explanation.csv")
    assert list(written.columns) == list(COLUMNS) and len(written) == len(out) == 2 * 3
    numbers = ["row", "order", "value", "prediction", "empty_prediction"]
    assert np.array_equal(written[numbers].to_numpy(), out[numbers].to_numpy())
    assert list(written.features) == list(out.features) == ["rooms", "area", "age"] * 2
    assert (tmp_path / "out" / "houses_explanation.png").stat().st_size > 10_000
    assert said[-1] == f"wrote {Path('out/houses_explanation.csv')}\nwrote {Path('out/houses_explanation.png')}"
    (tmp_path / "out").rename(tmp_path / "kept")
    retrofit.explain(frame, "price", rows=[2], say=lambda _: None, **SMALL)
    assert [path.name for path in tmp_path.iterdir()] == ["kept"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (dict(host="tiny_v2"), r"needs an o_closed host: .*tabpfn_v2"),
        (dict(rows=[40]), r"rows \[40\] are outside the table's 40 rows"),
        (dict(rows=[1, 1]), r"name a row twice"),
        (dict(order=3), r"order must be 1 .* or 2"),
        (dict(X=pd.DataFrame({"area": range(40), "price": range(40)}), order=2), r"order=2 needs at least 2 features"),
        (
            dict(budget=1),
            r"^budget=1 is below the 4 coalitions per row that order=1 over 3 features needs .*4 or more$",
        ),
        (dict(budget=2.5), r"budget must be null \(exact\) or an int of coalitions per row, got 2.5"),
        (dict(out_dir=RECORD_DIR), r"is in the committed record"),
        (dict(name="my houses"), r"dataset name 'my houses'"),
        (dict(max_seconds=0.0), r"exact values need all 8 coalitions: about .* s here .*over max_seconds=0;"),
        (dict(max_seconds=float("nan")), r"^max_seconds must be a number of seconds >= 0 .*got nan$"),
        (
            dict(categorical="area"),
            r"categorical must be a list of column names, got the one name 'area'; give a list even of one: \['area'\]",
        ),
    ],
)
def test_a_request_that_cannot_be_met_is_one_line(frame, settings, message):
    said: list[str] = []
    with pytest.raises(RetrofitError, match=message):
        retrofit.explain(settings.pop("X", frame), "price", **{"rows": [0], "say": said.append, **SMALL, **settings})
    assert len(said) <= 2  # the plan (and the estimate) at most: nothing explained


@pytest.mark.parametrize(
    "rows, more, offered",
    [
        ([0, 4], {"n_estimators": 2, "threads": 2}, ["fewer rows", "a smaller n_estimators", "threads=1 where"]),
        ([0], {}, []),
    ],
    ids=["every-knob", "knobs-at-their-floor-not-offered"],
)
def test_a_time_refusal_names_the_estimates_inputs_and_every_knob_that_shortens_it(frame, rows, more, offered):
    settings = {**SMALL, "threads": 1, **more}
    with pytest.raises(RetrofitError) as err:
        retrofit.explain(frame, "price", rows=rows, max_seconds=1e-9, say=lambda _: None, **settings)
    message = one_line(err)
    said = f"for {len(rows)} row(s) with n_estimators={settings['n_estimators']}, threads={settings['threads']}, "
    assert said + "device=cpu, over max_seconds=1e-09;" in message
    assert "pass budget=4 (coalitions per row for shapiq's KernelSHAP)" in message  # 1 + 3 unknowns
    always = ["device=cuda on a GPU", ", or fewer features (each one halves", "; or allow it: max_seconds="]
    knobs = ["fewer rows", "a smaller n_estimators", "threads=1 where"]
    assert [knob for knob in always + offered if knob not in message] == []
    assert [knob for knob in knobs if knob in message and knob not in offered] == []


def test_a_table_of_several_categorical_features_is_explained_and_adds_up():
    """Two categorical features (a text column and a numeric code declared categorical) on the
    default host, whose stored preset shuffles categories: explained, each row's values adding up
    to its prediction minus the empty one, the categories carrying part of it."""
    frame = houses()
    out = retrofit.explain(frame, "price", rows=[0, 1], categorical=["rooms"], say=lambda _: None, **SMALL)
    assert list(out.features) == ["area", "rooms", "zone"] * 2
    per_row = out.groupby("row").agg(total=("value", "sum"), p=("prediction", "first"), e=("empty_prediction", "first"))
    scale = float(frame.price.std())
    assert np.allclose(per_row.total, per_row.p - per_row.e, atol=1e-5 * scale)
    assert (out[out.features == "zone"].value.abs() > 1e-3 * scale).all()


def test_a_budget_below_the_orders_unknowns_is_refused_naming_the_minimum():
    """order=2 over 10 features fits 1 + 10 + 45 = 56 unknowns: budget=30 is refused before the
    fit, in one line naming 56."""
    X, y = regression_data(n=30, f=10)
    said: list[str] = []
    with pytest.raises(RetrofitError) as err:
        retrofit.explain(X, y, rows=[0], order=2, budget=30, say=said.append, **SMALL)
    assert one_line(err).endswith(
        "over 10 features needs (shapiq's KernelSHAP-IQ fits 56 unknowns; fewer give "
        "unbounded values): pass budget=56 or more"
    )
    assert said == []


def test_at_the_minimum_budget_pairs_are_bounded_and_add_up(caplog):
    """diabetes (10 features), order=2 at the minimum budget 56: every value is within the target's
    range and a row's values add up to its prediction minus the empty one; the same game at
    budget=30 (the library warns) gives values many times that range."""
    X_train, _, y_train, _ = diabetes_split()
    X, y = X_train[:100], y_train[:100]
    spread = float(y.max() - y.min())
    out = retrofit.explain(X, y, rows=[0], order=2, budget=56, say=lambda _: None, **SMALL)
    assert len(out) == 10 + 45 and out.value.abs().max() <= spread
    first = out.iloc[0]
    assert out.value.sum() == pytest.approx(first.prediction - first.empty_prediction, abs=1e-5 * spread)
    fixed = make_regressor(get_path("tiny_v3"), n_estimators=1, inference_config={"FEATURE_SHIFT_METHOD": None})
    closed = retrofit.retrofit(fixed.fit(X, y), "o_closed")
    with caplog.at_level(logging.WARNING, logger="retrofit.removal.game"):
        (under,) = retrofit.removal.shapley(closed, X[:1], budget=30, index="k-SII", max_order=2)
    assert np.abs(under.values).max() > 3 * spread
    assert "budget=30 is below the 56 coalitions" in caplog.text and "pass budget>=56" in caplog.text


@pytest.mark.parametrize(
    ("n_features", "order", "suggested"),
    [(17, 1, 512), (41, 2, 1 + 41 + 820)],
    ids=["the-default-suggestion", "raised-to-the-orders-unknowns"],
)
def test_many_features_without_a_budget_are_refused_before_the_fit(n_features, order, suggested):
    X, y = regression_data(n=30, f=n_features)
    said: list[str] = []
    with pytest.raises(RetrofitError, match=rf"2\^{n_features} coalitions; above 16 features pass a budget") as err:
        retrofit.explain(X, y, rows=[0], order=order, say=said.append, **SMALL)
    assert one_line(err).endswith(f"(e.g. budget={suggested})")
    assert said == []


@pytest.mark.slow
def test_the_explain_job_writes_its_csv_and_figure_and_says_the_plan_first(frame, tmp_path):
    frame.to_csv(tmp_path / "houses.csv", index=False)
    out = run_python(
        "-m",
        "retrofit",
        "explain",
        "dataset=csv",
        "dataset.path=houses.csv",
        "dataset.target=price",
        "rows=[0,5]",
        "order=2",
        "n_estimators=1",
        "results_dir=out",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("Shapley values and pairwise interactions of 2 row(s) over 3 features: 8 coalitions")
    assert "about" in lines[1] and "coalition" in out.stderr  # the estimate, then the progress bar
    written = pd.read_csv(tmp_path / "out" / "houses_explanation.csv")
    assert list(written.columns) == list(COLUMNS) and sorted(set(written.row)) == [0, 5] and len(written) == 2 * 6
    assert (tmp_path / "out" / "houses_explanation.png").stat().st_size > 10_000
