"""The O-closure audit: null rows inserted into a retrofitted host's in-context stage."""

from retrofit.audit.null_rows import NullRows, first_leaking_module
from retrofit.audit.run import COLUMNS, audit_host, audit_table

__all__ = ["COLUMNS", "NullRows", "audit_host", "audit_table", "first_leaking_module"]
