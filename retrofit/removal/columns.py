"""Which raw feature each model-input column of an ensemble member comes from (for feature removal):
`retrofit.member_columns`, which the audit's raw-table insertion reads too."""

from retrofit.member_columns import MIXING_STEPS, member_feature_columns

__all__ = ["MIXING_STEPS", "member_feature_columns"]
