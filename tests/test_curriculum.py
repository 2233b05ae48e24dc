"""`retrofit.pretrain.curriculum`: the stages switch at their step; a bad stage is one clear error."""

import pytest
import torch
from synthetic import CURRICULUM

from retrofit.errors import RetrofitError
from retrofit.pretrain.curriculum import draw_shape, parse_curriculum


def test_curriculum_switches_stage_and_rejects_bad_stages():
    stages = parse_curriculum(CURRICULUM)
    g = torch.Generator().manual_seed(0)
    assert draw_shape(stages, 0, g)[1] == 16 and draw_shape(stages, 3, g)[1] == 8
    with pytest.raises(ValueError, match="start at step 0"):
        parse_curriculum([{"from_step": 5, "buckets": CURRICULUM[0]["buckets"]}])
    bucket = CURRICULUM[0]["buckets"][0]
    keys = r"keys: \['rows', 'features', 'batch_size', 'weight'\]"
    refusals = {
        "batch_sise": (bucket | {"batch_sise": 4}, rf"curriculum stage 0: bad key 'batch_sise'.*{keys}"),
        "rows": (bucket | {"rows": [60, 40]}, r"rows must be \[low, high\] with 1 <= low <= high, got \[60, 40\]"),
        "batch_size": (bucket | {"batch_size": "many"}, r"curriculum stage 0: bad key '.*batch_size'"),
    }
    for broken, message in refusals.values():
        with pytest.raises(RetrofitError, match=message):
            parse_curriculum([{"from_step": 0, "buckets": [broken]}])
