"""The O-closure audit: null rows at the in-context stage, absent rows and columns at the model's
input and in the raw table before the preprocessing."""

from retrofit.audit.null_input import NullInput, leaking_stage
from retrofit.audit.null_rows import NullRows, first_leaking_module
from retrofit.audit.run import COLUMNS, INSERTIONS, RAW_INSERTIONS, REL_BOUND, Insertion, audit_host, audit_table

__all__ = [
    "COLUMNS",
    "INSERTIONS",
    "RAW_INSERTIONS",
    "REL_BOUND",
    "Insertion",
    "NullInput",
    "NullRows",
    "audit_host",
    "audit_table",
    "first_leaking_module",
    "leaking_stage",
]
