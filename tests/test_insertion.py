"""`retrofit.ops.insertion`: the insertion mask the operator experiments share (their entry points
run in `tests/test_ablation.py` and `tests/test_exactness.py`)."""

import pytest

from retrofit.ops.insertion import keep_mask


def test_keep_mask_rejects_out_of_range_positions():
    assert keep_mask(3, [0, 3, 3]).tolist() == [False, True, True, True, False, False]
    with pytest.raises(ValueError, match="insertion positions"):
        keep_mask(3, [4])
