"""tabpfn_v3's input stage with absence declared: presence-weighted statistics, rank-based grouping.

The stock stage (`TabPFNV3._preprocess_raw`, `_group_features`, `_prepare_y`) computes column
means and standard deviations over the train rows and groups each column with the columns
2^i places to its right (circularly). Here a cell is present when its row and its column are
(`p_BR`, `p_BC`, structural: 1 present, 0 absent), and
- every statistic over train rows counts present cells only (OStandardize's zero mass, with the
  host's own estimator: unbiased std, `std + eps`, constant column -> std 1, clip at +-100);
- sums run in row order (`ordered_sum`), so absent rows interleaved anywhere leave every
  partial sum, and hence every statistic, bitwise unchanged;
- grouping counts places among the present columns, so an absent column shifts no group;
- absent cells come out exactly 0, whatever they held.
With everything present the stage computes what the stock one does (up to summation order).
Shapes: B batch (ensemble members), R rows (N train rows first), C columns, G group size.
"""

import torch

from retrofit.tabpfn_internals import nan_and_inf_indicator

CLIP = 100.0
"""The host scaler's clip on standardised values."""


def ordered_sum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum of `x` along `dim` in index order (a sequential scan on the CPU); `dim` is removed.

    Inserting exact zeros anywhere along `dim` leaves the result bitwise unchanged, which a
    vectorised `sum` (whose lane split moves with the length) does not promise.
    """
    return x.cumsum(dim).select(dim, -1)


def present_cells(p_BR: torch.Tensor, p_BC: torch.Tensor) -> torch.Tensor:
    """(B, R, C) presence of the cells: row presence times column presence."""
    return p_BR[:, :, None] * p_BC[:, None, :]


def o_standardised_cells(x_BRC: torch.Tensor, p_BRC: torch.Tensor, num_train: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Imputed and standardised cells (B, R, C) and the NaN/inf indicators (B, R, C).

    `o_imputed_cells`, then `o_standardised`. Absent cells: 0 in both outputs.
    """
    imputed_BRC, indicator_BRC = o_imputed_cells(x_BRC, p_BRC, num_train)
    return o_standardised(imputed_BRC, p_BRC, num_train), indicator_BRC


def o_imputed_cells(x_BRC: torch.Tensor, p_BRC: torch.Tensor, num_train: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Imputed cells (B, R, C) and the NaN/inf indicators (B, R, C).

    Indicators as the host computes them (-2 NaN, 2 +inf, 4 -inf). A non-finite present cell is
    imputed with the mean of its column's finite present train cells (0 if none). Absent cells:
    0 in both outputs, whatever they held.
    """
    present_BRC = p_BRC > 0
    x_BRC = torch.where(present_BRC, x_BRC, 0)
    indicator_BRC = nan_and_inf_indicator(x_BRC)
    finite_BRC = torch.isfinite(x_BRC)
    mean_BC = _mean(x_BRC[:, :num_train], present_BRC[:, :num_train] & finite_BRC[:, :num_train])
    return torch.where(finite_BRC, x_BRC, mean_BC[:, None, :]), indicator_BRC  # absent cells: 0, indicator 0


def o_standardised(x_BRC: torch.Tensor, p_BRC: torch.Tensor, num_train: int) -> torch.Tensor:
    """Finite cells (B, R, C) standardised with the mean and unbiased std of their column's present
    train cells, as the host's scaler (`std + eps`, constant column -> std 1, clip at +-100). Absent
    cells: 0."""
    present_BRC = p_BRC > 0
    train_BNC = present_BRC[:, :num_train]
    mean_BC = _mean(x_BRC[:, :num_train], train_BNC)
    count_BC = ordered_sum(train_BNC.to(x_BRC.dtype), 1)
    centred_BNC = torch.where(train_BNC, x_BRC[:, :num_train] - mean_BC[:, None, :], 0)
    std_BC = (ordered_sum(centred_BNC.square(), 1) / (count_BC - 1).clamp(min=1)).sqrt()
    std_BC = torch.where((std_BC == 0) | (count_BC <= 1), 1, std_BC)
    scaled_BRC = (x_BRC - mean_BC[:, None, :]) / (std_BC[:, None, :] + torch.finfo(std_BC.dtype).eps)
    return torch.where(present_BRC, scaled_BRC.clip(-CLIP, CLIP), 0)


def _mean(x_BNC: torch.Tensor, keep_BNC: torch.Tensor) -> torch.Tensor:
    """(B, C) mean over the kept rows of each column (0 for a column with none kept)."""
    total_BC = ordered_sum(torch.where(keep_BNC, x_BNC, 0), 1)
    return total_BC / ordered_sum(keep_BNC.to(x_BNC.dtype), 1).clamp(min=1)


def o_grouped_cells(cells_BRC: torch.Tensor, p_BC: torch.Tensor, group_size: int) -> torch.Tensor:
    """(B, R, C, G): each column with the present columns 2^i places to its right among the
    present ones (i < G), circularly; the stock `torch.roll` grouping when every column is present.

    Entries of absent columns are arbitrary (their cells are gated to 0 by the embedding).
    """
    return gathered_groups(cells_BRC, o_column_groups(p_BC, group_size))


def o_column_groups(p_BC: torch.Tensor, group_size: int) -> torch.Tensor:
    """(B, C, G) column indices: column c's group is the present columns 2^i places to its right
    among the present ones (i < G), circularly (`o_grouped_cells`). A present column's group
    depends on nothing but which columns are present; an absent column's entries are arbitrary."""
    present_BC = p_BC > 0
    count_B1 = present_BC.sum(1, keepdim=True).clamp(min=1)
    rank_BC = (present_BC.cumsum(1) - 1).clamp(min=0)
    order_BC = torch.argsort((~present_BC).to(torch.uint8), dim=1, stable=True)
    return torch.stack([order_BC.gather(1, (rank_BC + 2**i) % count_B1) for i in range(group_size)], dim=-1)


def gathered_groups(cells_BRC: torch.Tensor, groups_BUG: torch.Tensor) -> torch.Tensor:
    """(B, R, U, G): the cells of the columns `groups_BUG` (B, U, G) names, per row."""
    B, R, _ = cells_BRC.shape
    _, U, G = groups_BUG.shape
    index_BRX = groups_BUG.reshape(B, 1, U * G).expand(B, R, U * G)
    return cells_BRC.gather(2, index_BRX).view(B, R, U, G)


def o_targets(y: torch.Tensor, p_BN: torch.Tensor) -> torch.Tensor:
    """Train targets (B, N) from tabpfn's `y` ((N,) shared by the batch, or (N, B)).

    A non-finite target of a present row is imputed with the mean of the finite present
    targets, as the host imputes over all train rows; absent rows' targets become 0.
    """
    B, N = p_BN.shape
    y_BN = y.reshape(N, -1).transpose(0, 1).expand(B, N)
    keep_BN = (p_BN > 0) & torch.isfinite(y_BN)
    mean_B = _mean(y_BN[:, :, None], keep_BN[:, :, None])[:, 0]
    y_BN = torch.where(torch.isfinite(y_BN), y_BN, mean_B[:, None])
    return torch.where(p_BN > 0, y_BN, 0)
