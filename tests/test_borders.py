"""`retrofit.pretrain.borders.quantile_borders`: the bar borders, with a uniform tail share."""

import pytest

from retrofit.pretrain.borders import quantile_borders


def test_tail_share_gives_the_tails_their_own_buckets():
    """Pure quantile borders leave the tail one bucket more than 4 sd wide (a host trained on them
    extrapolates in one jump to the last border); a 20% uniform share keeps every bucket under 1 sd
    wide and the borders at ±8."""
    plain = quantile_borders(100, seed=0, n_values=20_000)
    mixed = quantile_borders(100, seed=0, n_values=20_000, tail_share=0.2)
    assert plain.diff().max() > 4.0 and mixed.diff().max() < 1.0
    assert (mixed[0], mixed[-1]) == (-8.0, 8.0) and bool((mixed.diff() > 0).all())
    with pytest.raises(ValueError, match="tail_share"):
        quantile_borders(100, seed=0, n_values=1000, tail_share=1.0)
