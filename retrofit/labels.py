"""The one rule for names that label results and become parts of paths (datasets, hosts, variants).

A label is 1 to `LABEL_CHARS` characters from letters, digits, `_`, `.` and `-`, not starting with
`.` or `-`: it can never hold a separator, be `.` or `..`, or be too long for a file name. Every
name that enters the harness from a config, an override or an argument and ends up in a path is
checked here, where it enters.
"""

import re

from retrofit.errors import RetrofitError

LABEL = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
"""What a label may be (with at most `LABEL_CHARS` characters)."""
LABEL_CHARS = 100
"""The longest label: far below any file system's 255-byte name limit, with room for a suffix."""
DEVICE_DOC = ("label", "what the row was computed on: `cpu`, or the CUDA model name (`torch.cuda.get_device_name`)")
"""(unit, meaning) of every results table's `device` column (`retrofit.hosts.device.device_label` writes it)."""


def check_label(kind: str, name: object, error: type[RetrofitError] = RetrofitError) -> str:
    """`name` if it is a label (see module docstring), else `error` naming `kind` (e.g. "dataset
    name") and the fix."""
    if not isinstance(name, str) or not re.fullmatch(LABEL, name):
        raise error(
            f"{kind} {name!r} labels results and names files: use letters, digits, _ . - "
            "and start with a letter, digit or _ (e.g. my_table)"
        )
    if len(name) > LABEL_CHARS:
        raise error(f"{kind} {name[:20]!r}... has {len(name)} characters; use at most {LABEL_CHARS}")
    return name
