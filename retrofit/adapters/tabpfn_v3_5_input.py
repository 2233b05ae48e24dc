"""tabpfn_v3_5's in-context ECDF feature with absence declared: ranks among the present train rows.

The stock stage (`TabPFNV3p5._preprocess_raw`) ranks every imputed cell against bucket edges and
counts built from its column's train rows (`_build_ecdf_context`: up to `ecdf_num_buckets` edges,
exact midranks on the edges, linear between them) and divides by the train-row count. Here the
edges and counts are built from the present train rows only, gathered in row order, so a table
with absent rows (structural presence `p_BR`, 1 present, 0 absent) gets bitwise the ranks of the
same table without them; a column's ranks depend on nothing but that column, so absent columns
change no rank either. With everything present the ranks are the host's, bitwise.
Shapes: B batch (ensemble members), R rows (N train rows first), C columns, K bucket edges.
"""

import torch

from retrofit.tabpfn_internals import ecdf_context, in_context_ecdf


def o_ecdf_ranks(
    x_BRC: torch.Tensor, p_BR: torch.Tensor, p_BC: torch.Tensor, num_train: int, num_buckets: int
) -> torch.Tensor:
    """(B, R, C) midrank ECDF in [0, 1] of every imputed cell `x_BRC` among its column's present
    train cells (the host's `ecdf_context` and `in_context_ecdf` on them).

    Batch elements with equal present train counts are ranked in one call on their present train
    rows gathered in order (no element padded to another's count). Absent cells, and every cell
    of an element without a present train row: 0.
    """
    C = x_BRC.shape[2]
    present_BN = p_BR[:, :num_train] > 0
    count_B = present_BN.sum(1)
    ecdf_BRC = torch.zeros_like(x_BRC)
    for count in count_B.unique().tolist():
        if count == 0:
            continue
        b_g = (count_B == count).nonzero()[:, 0]
        rows_gn = present_BN[b_g].nonzero()[:, 1].view(len(b_g), count)  # row-major: each element's rows in order
        train_gnC = x_BRC[b_g].gather(1, rows_gn[:, :, None].expand(-1, -1, C))
        ecdf_BRC[b_g] = in_context_ecdf(x_BRC[b_g], ecdf_context(train_gnC, count, num_buckets))
    present_BRC = (p_BR[:, :, None] > 0) & (p_BC[:, None, :] > 0)
    return torch.where(present_BRC, ecdf_BRC, 0)
