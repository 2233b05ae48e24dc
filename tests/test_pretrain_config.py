"""`retrofit.pretrain.pretrain_config.PretrainConfig`: the shipped pretraining configs are typed, a
typo is an error."""

import pytest

from retrofit.errors import RetrofitError
from retrofit.pretrain.pretrain_config import PretrainConfig


@pytest.mark.parametrize("host", ["tiny_v3", "tiny_v2", "tiny_v3_5"])
def test_shipped_pretrain_configs_are_typed_and_a_typo_is_an_error(host, hydra_compose):
    node = hydra_compose("pretrain_host", [f"pretrain={host}"]).pretrain
    config = PretrainConfig.from_config(node)
    assert (config.host_name, config.border_tail_share) == (host, 0.2)
    with pytest.raises(RetrofitError, match="max_minuts"):
        PretrainConfig.from_config({**node, "max_minuts": 5})
    with pytest.raises(RetrofitError, match="max_minutes"):
        PretrainConfig.from_config({**node, "max_minutes": "soon"})
