"""`retrofit.adapters.in_context_attention`: OAttention's settings refuse bad values, and every
variant goes through them."""

import pytest

from retrofit.adapters import AttentionSettings
from retrofit.errors import RetrofitError
from retrofit.variants import resolve_variant

EPS_DEN = "eps_den must be a finite number > 0"


@pytest.mark.parametrize(
    ("settings", "message", "as_hparams"),
    [
        ({"eps_den": 0.0}, EPS_DEN, True),
        ({"eps_den": -1e-6}, EPS_DEN, True),
        ({"eps_den": float("inf")}, EPS_DEN, True),
        ({"eps_den": float("nan")}, EPS_DEN, True),
        ({"eps_den": 1e-6, "eps_mode": "softmax"}, r"eps_mode must be one of \('absolute', 'relative'\)", True),
        # what the variant schema already types (a bool or a string for eps_den, "yes" for compact):
        ({"eps_den": True}, EPS_DEN, False),
        ({"eps_den": "1e-6"}, EPS_DEN, False),
        ({"eps_den": 1e-6, "compact": "yes"}, "compact must be true or false", False),
    ],
)
def test_attention_settings_refuse_bad_values_and_every_variant_goes_through_them(settings, message, as_hparams):
    with pytest.raises(RetrofitError, match=message):
        AttentionSettings(**settings)
    if as_hparams:
        with pytest.raises(RetrofitError, match=rf"variant 'oa_only': {message}"):
            resolve_variant("oa_only", **settings)
