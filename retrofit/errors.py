"""The harness's user-facing errors, and how entry points turn them into a clean exit.

Every error a user can fix is a `RetrofitError` (a ValueError, so library callers can catch
either) whose message says what was wrong and what to do. `DatasetError` and `RunnerError` say
which layer refused. Entry points wrap their work in `exit_on_user_error`: the message on stderr,
exit status 1, no traceback; any other exception is a bug and keeps its traceback.
"""

from collections.abc import Iterator
from contextlib import contextmanager


class RetrofitError(ValueError):
    """Bad input or configuration; the message names the problem and the fix."""


class DatasetError(RetrofitError):
    """A dataset cannot be loaded or used as given (dataset YAML, file or override to change)."""


class RunnerError(RetrofitError):
    """A sweep or case cannot run as configured (config or override to change)."""


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `RetrofitError` into `error: <message>` on stderr and exit status 1, no traceback."""
    try:
        yield
    except RetrofitError as err:
        raise SystemExit(f"error: {err}") from None
