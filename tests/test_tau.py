"""`retrofit.adapters.tau`: the calibrated tau ignores null carriers and is one computation from
the carriers or their squared norms."""

import torch

from retrofit.adapters import TauRule
from retrofit.ops.presence import squared_norm


def test_tau_of_squared_norms_is_tau_of_the_carriers():
    """A block computes each carrier's squared norms once, for its tau and its presence: the same bits."""
    h_BXE = torch.randn(3, 11, 8, generator=torch.Generator().manual_seed(0))
    h_BXE[1, 2:5] = 0
    for rule in (TauRule("calibrated", c=1e-3), TauRule("absolute", value=0.5)):
        assert torch.equal(rule.tau_of_squared(squared_norm(h_BXE)), rule.tau(h_BXE))


def test_tau_calibration_ignores_null_carriers():
    rule = TauRule("calibrated", c=1e-3)
    h_BXE = torch.randn(2, 9, 8, generator=torch.Generator().manual_seed(0))
    with_nulls = torch.cat([h_BXE[:, :4], torch.zeros(2, 5, 8), h_BXE[:, 4:]], dim=1)
    assert torch.equal(rule.tau(h_BXE), rule.tau(with_nulls))
    median = h_BXE.square().sum(-1).median(dim=1).values
    assert torch.allclose(rule.tau(h_BXE), 1e-3 * median)
