"""Sink mass: how much attention mass OAttention's sink would absorb on a host's real carriers.

Absolute-mode OAttention gives query i the sink share `eps_den / (eps_den + W_i)`,
`W_i = sum_j p_j exp(s_ij)` over the N context rows. Softmax is shift-invariant, so a trained host
may put every logit of a query far below `log eps_den`; the sink then takes the mass and the
retrofitted output collapses towards 0. `SinkProbe` measures this on the frozen stock host without
changing a prediction: each architecture's O wrapper (`OBlock.probe_attention`, built on the stock
block and not swapped in) hooks the carriers entering each in-context attention and re-projects
queries and keys with the attention's own weights exactly as its O attention would (v3.5's per-head
q/k norms, v3's query scaling by the keys' presence mass; test rows see only the test key/value
heads). Presences follow the variant's tau rule on those carriers. Per (block, head) it pools every
present receiver (train and test rows; every column for the v2 family; every ensemble member).
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tabpfn import TabPFNRegressor
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.adapters import AttentionSettings, architecture_of
from retrofit.adapters.tau import TauRule
from retrofit.audit.hooks import ModelHooks, in_context_blocks_of
from retrofit.data import DatasetSpec
from retrofit.fitting import CaseSpec, fit_case
from retrofit.hosts.device import device_label
from retrofit.labels import DEVICE_DOC
from retrofit.patching import retrofit
from retrofit.variants import resolve_variant

CASE_DOCS = {
    "host": ("label", "host label"),
    "device": DEVICE_DOC,
    "dataset": ("label", "dataset name"),
    "seed": ("integer", "split and `random_state` seed of the case"),
}
"""The columns `sink_mass_table` puts first, naming the case: column -> (unit, meaning)."""

COLUMN_DOCS = {
    **CASE_DOCS,
    "block": ("integer", "in-context block (from 0)"),
    "head": ("integer", "attention head (from 0)"),
    "n_queries": ("count", "present receivers (queries) measured"),
    "sink_share_mean": ("fraction", "mean over the queries of the mass OAttention's sink takes"),
    "sink_share_max": ("fraction", "largest sink share over the queries"),
    "frac_queries_sink_dominated": ("fraction", "share of queries whose sink share exceeds 1/2"),
    "max_logit_min": (
        "logit",
        "smallest per-query max_j (s_ij + log p_j), s_ij = q_i · k_j / √D (compare log eps_den)",
    ),
    "max_logit_q01": ("logit", "its 1 % quantile over the queries"),
    "max_logit_q50": ("logit", "its median"),
    "max_logit_q99": ("logit", "its 99 % quantile"),
}
"""Column -> (unit, meaning) of `results/sink_mass.csv` (`sink_mass_table`), in its order."""

COLUMNS = tuple(COLUMN_DOCS)[len(CASE_DOCS) :]
"""The columns of one probe (`sink_mass`): `COLUMN_DOCS` less the case's."""


def sink_stats(logit_xK: torch.Tensor, eps_den: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per query (...): the sink share `eps_den / (eps_den + sum_j exp(l_ij))` and `max_j l_ij` of
    presence-weighted logits `l_ij = s_ij + log p_j` (...) x K (-inf for null sources).

    The share is the mass absolute-mode OAttention gives its sink (1 where every source is null),
    evaluated as sigmoid(log eps_den - logsumexp_j l_ij): exact for any logit scale.
    """
    max_x = logit_xK.amax(-1)
    shift_x1 = torch.where(torch.isfinite(max_x), max_x, 0.0)[..., None]
    lse_x = shift_x1[..., 0] + torch.log((logit_xK - shift_x1).exp_().sum(-1))
    return torch.sigmoid(math.log(eps_den) - lse_x), max_x


class SinkProbe(ModelHooks):
    """Context manager recording sink shares and max logits of every in-context attention call
    of `regressor`'s models (use it on a frozen, unpatched clone); `table()` summarises them."""

    def __init__(self, regressor: TabPFNRegressor, tau: TauRule, eps_den: float):
        super().__init__(regressor)
        self.tau = tau
        self.eps_den = eps_den
        self.shares: dict[int, list[torch.Tensor]] = defaultdict(list)
        """block index -> (H, n) sink shares of the present receivers, one tensor per call."""
        self.max_logits: dict[int, list[torch.Tensor]] = defaultdict(list)

    def _hooks(self, model: nn.Module) -> list[RemovableHandle]:
        wrapper = architecture_of(model).wrapper
        handles = []
        for i, _, block in in_context_blocks_of(model):
            probe = wrapper(block, frozenset({"attention"}), self.tau, AttentionSettings(self.eps_den))
            handles += probe.probe_attention(partial(self._record, i))
        return handles

    @torch.no_grad()
    def _record(
        self,
        index: int,
        q_BRHD: torch.Tensor,
        k_BNGD: torch.Tensor,
        p_BR: torch.Tensor,
        N: int,
        test_kv_heads: int | None,
    ) -> None:
        """Sink shares and max logits of block `index`'s present receivers (see `AttentionRecord`)."""
        H, D, G = q_BRHD.shape[2], q_BRHD.shape[3], k_BNGD.shape[2]
        p_BN = p_BR[:, :N]
        for rows, kv_heads in ((slice(0, N), G), (slice(N, None), test_kv_heads or G)):
            q_BHQD = q_BRHD[:, rows].transpose(1, 2).float()
            k_BHND = k_BNGD[:, :, :kv_heads].transpose(1, 2).float().repeat_interleave(H // kv_heads, dim=1)
            receiver_BQ = p_BR[:, rows] > 0
            log_p_BN = torch.log(p_BN.float())
            for b in range(q_BHQD.shape[0]):  # one batch element at a time: an (H, Q, N) buffer
                logit_HQN = torch.baddbmm(
                    log_p_BN[b, None, None, :], q_BHQD[b], k_BHND[b].transpose(-1, -2), alpha=1 / math.sqrt(D)
                )
                share_HQ, max_HQ = sink_stats(logit_HQN, self.eps_den)
                self.shares[index].append(share_HQ[:, receiver_BQ[b]])
                self.max_logits[index].append(max_HQ[:, receiver_BQ[b]])

    def table(self) -> pd.DataFrame:
        """One row per (block, head) with the columns of `COLUMNS`."""
        rows = []
        for index in sorted(self.shares):
            share_HX = torch.cat(self.shares[index], dim=1).double().numpy()
            logit_HX = torch.cat(self.max_logits[index], dim=1).double().numpy()
            for head, (share_X, logit_X) in enumerate(zip(share_HX, logit_HX, strict=True)):
                q01, q50, q99 = np.quantile(logit_X, [0.01, 0.5, 0.99])
                values = (
                    index,
                    head,
                    share_X.size,
                    share_X.mean(),
                    share_X.max(),
                    (share_X > 0.5).mean(),
                    logit_X.min(),
                    q01,
                    q50,
                    q99,
                )
                rows.append(dict(zip(COLUMNS, values, strict=True)))
        return pd.DataFrame(rows, columns=list(COLUMNS))


def sink_mass(
    regressor: TabPFNRegressor,
    X_test: Any,
    *,
    tau: Mapping[str, Any] | None = None,
    eps_den: float | None = None,
) -> pd.DataFrame:
    """Sink diagnostics (see `COLUMNS`) of the fitted `regressor` predicting `X_test`.

    `tau` (e.g. `{"mode": "calibrated", "c": 1e-3}`) and `eps_den` default to the `oa_only`
    variant's. Runs on a frozen clone (`retrofit(regressor, "baseline")`); `regressor` is untouched.
    """
    overrides = {key: value for key, value in {"tau": tau, "eps_den": eps_den}.items() if value is not None}
    variant = resolve_variant("oa_only", **overrides)
    frozen = retrofit(regressor, "baseline")
    with SinkProbe(frozen, variant.tau, variant.eps_den) as probe:
        frozen.predict(X_test)
    return probe.table()


def sink_mass_table(
    hosts: Mapping[str, Path],
    datasets: Iterable[DatasetSpec],
    seeds: Iterable[int],
    *,
    base_dir: Path,
    n_estimators: int,
    test_size: float,
    tau: Mapping[str, Any] | None = None,
    eps_den: float | None = None,
    device: str = "cpu",
) -> pd.DataFrame:
    """`sink_mass` rows for every host (label -> checkpoint) x dataset x seed, in the columns of
    `COLUMN_DOCS` (the case's, `CASE_DOCS`, first). Each case is loaded, split and fitted as the sweep's case
    (`retrofit.fitting.fit_case`: random_state = seed, on `device`) and its test rows probed."""
    datasets, seeds = list(datasets), list(seeds)
    frames = []
    for host, path in hosts.items():
        for spec in datasets:
            for seed in seeds:
                case = fit_case(CaseSpec(spec, seed, Path(path), base_dir, n_estimators, test_size, device=device))
                frame = sink_mass(case.regressor, case.X_test, tau=tau, eps_den=eps_den)
                frames.append(frame.assign(host=host, device=device_label(device), dataset=spec.name, seed=seed))
    return pd.concat(frames, ignore_index=True)[list(COLUMN_DOCS)]
