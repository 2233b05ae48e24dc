"""The harness's user-facing error type.

A `RetrofitError` says what was wrong and what to do; entry points print its message and exit
non-zero without a stack trace. It subclasses ValueError so library callers can catch either.
"""


class RetrofitError(ValueError):
    """Bad input or configuration; the message names the problem and the fix."""
