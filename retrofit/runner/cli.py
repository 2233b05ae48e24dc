"""Turning a user-fixable error into a clean exit, for the entry points and the sweep callback."""

from collections.abc import Iterator
from contextlib import contextmanager

from retrofit.errors import RetrofitError


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `RetrofitError` into `error: <message>` on stderr and exit status 1, no traceback.

    Bugs (any other exception) keep their traceback.
    """
    try:
        yield
    except RetrofitError as err:
        raise SystemExit(f"error: {err}") from None
