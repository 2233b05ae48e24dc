"""How two aligned arrays of result values differ, and the largest differences as the reproduction
line says them (`retrofit.results.reproduction`).

Per value: |A − B| and |A − B| / |B|. Equal values (NaN in both included) differ by 0. Where B is 0
and A is not, there is no relative difference: that |A − B| is said on its own. A value in one file
only (NaN on one side) has neither; it is counted.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Extremes:
    """The largest differences over some values: `rel` (NaN when no value has a relative difference)
    in `rel_column`; `at_zero`, the largest |A − B| where B is 0 (0.0 when none), in `zero_column`;
    `one_file`, how many values are in one file only."""

    rel: float
    rel_column: str
    at_zero: float
    zero_column: str
    one_file: int

    def text(self) -> str:
        """`max rel |Δ| <x> [in <column>][, max |Δ| <y> where the reference is 0 in <column>][, <n>
        values in one file only]`; `n/a` for x when no value has a relative difference."""
        where = f" in {self.rel_column}" if self.rel > 0 else ""
        parts = [f"max rel |Δ| {self.rel:.3g}{where}" if not np.isnan(self.rel) else "max rel |Δ| n/a"]
        if self.at_zero > 0:
            parts.append(f"max |Δ| {self.at_zero:.3g} where the reference is 0 in {self.zero_column}")
        if self.one_file:
            parts.append(f"{self.one_file} value{'s' if self.one_file > 1 else ''} in one file only")
        return ", ".join(parts)


def differences(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per value of A (`left`) and B (`right`, the same shape): |A − B| (inf for a value in one file
    only); |A − B| / |B| (NaN where there is none: B is 0 and A is not, or a value in one file only);
    whether the value is in one file only."""
    one_file = np.isnan(left) != np.isnan(right)
    equal = (left == right) | (np.isnan(left) & np.isnan(right))
    diff = np.where(one_file, np.inf, np.where(equal, 0.0, np.abs(left - right)))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(equal, 0.0, np.where(one_file | (right == 0), np.nan, diff / np.abs(right)))
    return diff, rel, one_file


def extremes(diff: np.ndarray, rel: np.ndarray, one_file: np.ndarray, columns: list[str]) -> Extremes:
    """The `Extremes` of values (rows × `columns`) as `differences` gives them."""
    defined, at_zero = ~np.isnan(rel), np.isnan(rel) & ~one_file
    top = np.unravel_index(np.argmax(np.where(defined, rel, -1.0)), rel.shape) if defined.any() else None
    zero = np.unravel_index(np.argmax(np.where(at_zero, diff, -1.0)), diff.shape) if at_zero.any() else None
    return Extremes(
        rel=float(rel[top]) if top is not None else float("nan"),
        rel_column=columns[top[1]] if top is not None else "",
        at_zero=float(diff[zero]) if zero is not None else 0.0,
        zero_column=columns[zero[1]] if zero is not None else "",
        one_file=int(one_file.sum()),
    )


def relative_cell(largest: float, relative: float) -> str:
    """A table cell for the relative difference `relative` (NaN where there is none) of a value
    whose |A − B| is `largest` (inf for a value in one file only; NaN where no value was compared)."""
    if not np.isnan(relative) or np.isnan(largest):
        return f"{relative:.3g}"
    return "n/a (a value in one file only)" if np.isinf(largest) else "n/a (reference 0)"
