"""`retrofit.removal.row_values` and `leave_one_out` (retrofit/removal/rows.py): training rows removed
from the context, equal to the forward on the reduced context (tiny random tabpfn_v3 host)."""

import copy

import numpy as np
import pytest
import torch
from refusals import one_line
from synthetic import N_TRAIN, REMOVAL_REL_BOUND, closed_fit, removal_close, removal_table

import retrofit
from retrofit.batching import decode_members, member_inputs
from retrofit.errors import RetrofitError
from retrofit.removal import leave_one_out, row_values


def test_all_rows_is_predict_and_a_row_set_is_the_reduced_context(removal_case):
    regressor, _, _, X_test, _ = removal_case
    rows = np.ones((3, N_TRAIN), dtype=bool)
    rows[1, ::2] = False
    rows[2, :50] = False
    got = row_values(regressor, X_test, rows)
    reference = regressor.predict(X_test)
    assert np.abs(got[0] - reference).max() <= REMOVAL_REL_BOUND * np.abs(reference).max()
    for k in (1, 2):
        keep = torch.as_tensor(rows[k])
        logits = []
        for member in member_inputs(0, regressor, X_test):
            x = torch.cat([member.x_RC[:N_TRAIN][keep], member.x_RC[N_TRAIN:]])[:, None]
            with torch.inference_mode():
                logits.append(regressor.models_[0](x, member.y_N[keep][:, None])[:, 0])
        reduced = decode_members(regressor, logits)
        assert np.abs(got[k] - reduced).max() <= REMOVAL_REL_BOUND * np.abs(reduced).max()


@pytest.mark.parametrize("compact", [False, True])
def test_absent_rows_values_change_nothing(host, compact):
    X_train, y_train, X_test, _ = removal_table()
    regressor = closed_fit(host, X_train, y_train, compact)
    rows = np.ones((1, N_TRAIN), dtype=bool)
    rows[0, [3, 17, 40]] = False
    reference = row_values(regressor, X_test, rows)
    changed = copy.deepcopy(regressor)
    for member in changed.executor_.ensemble_members:
        member.X_train[~rows[0]] = 1e3
        member.y_train[~rows[0]] = -1e3
    assert removal_close(row_values(changed, X_test, rows), reference, np.abs(reference).max(), compact)


def test_leave_one_out(removal_case):
    regressor, _, _, X_test, y_test = removal_case
    loo = leave_one_out(regressor, X_test, y_test)
    assert loo.shape == (N_TRAIN,)
    for i in (0, 31):
        rows = np.ones((1, N_TRAIN), dtype=bool)
        rows[0, i] = False
        without = row_values(regressor, X_test, rows)[0]
        loss = lambda p: float(((p - y_test) ** 2).mean())  # noqa: E731
        assert abs(loo[i] - (loss(without) - loss(regressor.predict(X_test)))) <= 1e-5 * loss(without)
    assert np.abs(loo).max() > 0
    with pytest.raises(RetrofitError, match="at least one present"):
        row_values(regressor, X_test, np.zeros((1, N_TRAIN), dtype=bool))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_leave_one_out_refuses_a_query_row_without_a_finite_target(tiny_v3_fitted, bad):
    """A NaN in y made every value NaN, with no message."""
    closed, X_test, y_test = (
        retrofit.retrofit(tiny_v3_fitted[0], "o_closed"),
        tiny_v3_fitted[1][:4],
        tiny_v3_fitted[2][:4].copy(),
    )
    y_test[2] = bad
    with pytest.raises(RetrofitError, match=f"y of query row 2 is {bad}") as err:
        leave_one_out(closed, X_test, y_test)
    one_line(err)
