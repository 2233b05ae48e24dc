"""Fixed held-out prior tables and the host's skill on them (NLL, R²), with simple baselines.

R² here is per dataset against the test rows' own mean, averaged over datasets; the targets
are z-scored on the training rows as in training.
"""

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score

from retrofit.hosts.checkpoint import regression_logits
from retrofit.prior import PriorBatch, sample_batch, sample_shape, zscore_targets


@dataclass(frozen=True)
class ValidationSet:
    name: str
    batches: tuple[PriorBatch, ...]


def make_validation_set(
    name: str, seed: int, n_batches: int, batch_size: int, rows: tuple[int, int], features: tuple[int, int]
) -> ValidationSet:
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n_batches):
        batch = sample_batch(sample_shape(g, rows, features), batch_size, g)
        batches.append(
            PriorBatch(
                batch.x_RBF,
                zscore_targets(batch.y_RB, batch.shape.n_train),
                batch.family_B,
                batch.noise_std_B,
                batch.shape,
            )
        )
    return ValidationSet(name, tuple(batches))


def _r2_per_dataset(pred_TB: torch.Tensor, y_TB: torch.Tensor) -> torch.Tensor:
    ss_res = ((pred_TB - y_TB) ** 2).sum(0)
    ss_tot = ((y_TB - y_TB.mean(0)) ** 2).sum(0).clamp_min(1e-8)
    return 1 - ss_res / ss_tot


@torch.no_grad()
def evaluate_host(model: torch.nn.Module, criterion, vset: ValidationSet) -> dict[str, float]:
    """Mean NLL and mean per-dataset R² of the host's predictive mean on `vset` (its CPU tables
    moved to the device `model` is on)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    nll, r2 = [], []
    for b in vset.batches:
        nt = b.shape.n_train
        x_RBF, y_RB = b.x_RBF.to(device), b.y_RB.to(device)
        logits_TBK = regression_logits(model, x_RBF, y_RB[:nt])
        nll.append(criterion(logits_TBK, y_RB[nt:]).mean().item())
        r2.append(_r2_per_dataset(criterion.mean(logits_TBK), y_RB[nt:]).cpu())
    model.train(was_training)
    return {f"{vset.name}_nll": float(np.mean(nll)), f"{vset.name}_r2": torch.cat(r2).mean().item()}


def evaluate_baselines(vset: ValidationSet, max_datasets: int = 64, seed: int = 0) -> dict[str, float]:
    """Median per-dataset R² of ridge (CV alpha, standardised, NaN -> column mean) and a random
    forest (100 trees) on the first `max_datasets` datasets of `vset`: how learnable the prior is.
    The median, as one table whose few test rows happen to be near-constant scores an R² of -60
    and would swamp a mean."""
    scores: dict[str, list[float]] = {"ridge": [], "rf": []}
    seen = 0
    for b in vset.batches:
        nt = b.shape.n_train
        for i in range(b.x_RBF.shape[1]):
            if seen >= max_datasets:
                break
            x = b.x_RBF[:, i].numpy().astype(np.float64)
            col_mean = np.nanmean(x[:nt], axis=0)
            x = np.where(np.isnan(x), np.nan_to_num(col_mean), x)
            mu, sd = x[:nt].mean(0), x[:nt].std(0) + 1e-9
            xs = (x - mu) / sd
            y = b.y_RB[:, i].numpy()
            ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(xs[:nt], y[:nt])
            rf = RandomForestRegressor(n_estimators=100, random_state=seed, n_jobs=1).fit(x[:nt], y[:nt])
            scores["ridge"].append(r2_score(y[nt:], ridge.predict(xs[nt:])))
            scores["rf"].append(r2_score(y[nt:], rf.predict(x[nt:])))
            seen += 1
    return {f"{vset.name}_r2_{k}": float(np.median(v)) for k, v in scores.items()}
