"""`retrofit.removal.context`: the batched forwards over one context, many coalitions — the cell bound
per forward and the shared column stage change nothing but the work (tiny random tabpfn_v3 host)."""

import numpy as np
import pytest
from synthetic import COALITIONS, N_FEATURES, REMOVAL_REL_BOUND, closed_fit, removal_close, removal_table

from retrofit.removal import values


def test_batch_bound_changes_nothing_but_the_number_of_forwards(removal_case):
    regressor, _, _, X_test, _ = removal_case
    one_per_forward = values(regressor, X_test, COALITIONS, max_cells=1)
    assert (
        np.abs(one_per_forward - values(regressor, X_test, COALITIONS)).max()
        <= REMOVAL_REL_BOUND * np.abs(one_per_forward).max()
    )


@pytest.mark.parametrize("compact", [False, True])
def test_shared_column_stage_equals_the_whole_forward_per_coalition(host, compact):
    X_train, y_train, X_test, _ = removal_table()
    regressor = closed_fit(host, X_train, y_train, compact)
    coalitions = np.random.default_rng(2).random((24, N_FEATURES)) < 0.5
    coalitions = np.concatenate([COALITIONS, coalitions])
    shared = values(regressor, X_test, coalitions)
    whole = values(regressor, X_test, coalitions, share_columns=False)
    # a column token computed once per distinct group and gathered: the same arithmetic per token
    assert removal_close(shared, whole, np.abs(whole).max(), compact)
    assert np.abs(shared - whole).max() <= REMOVAL_REL_BOUND * np.abs(whole).max()
