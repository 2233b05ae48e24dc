"""The harness's user-facing errors, and how entry points turn them into a clean exit.

Every error a user can fix is a `RetrofitError` (a ValueError, so library callers can catch
either) whose message says what was wrong and what to do. `DatasetError` and `RunnerError` say
which layer refused. Entry points wrap their work in `exit_on_user_error`: the message on stderr,
exit status 1, no traceback; any other exception is a bug and keeps its traceback (around Hydra's
`main`, `retrofit.jobs.exits` says a config that does not compose and Ctrl-C in one line).
"""

import errno
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

LISTED = 20
"""The most names (columns, keys) an error message lists."""
MESSAGE_CHARS = 500
"""The most characters of a foreign error (tabpfn's, pandas') an error message quotes."""


class RetrofitError(ValueError):
    """Bad input or configuration; the message names the problem and the fix."""


class DatasetError(RetrofitError):
    """A dataset cannot be loaded or used as given (dataset YAML, file or override to change)."""


class RunnerError(RetrofitError):
    """A sweep or case cannot run as configured (config or override to change)."""


def printable_output() -> None:
    """Let stdout and stderr print what their encoding can hold: a character it cannot (Δ, τ, ×
    under `PYTHONIOENCODING=ascii` or a C locale) prints as `?` instead of ending the command in a
    UnicodeEncodeError after its results were written. Every entry point calls it first."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `RetrofitError` into `error: <message>` on stderr and exit status 1, no traceback, and
    so a path given with a name too long for its file system (`ENAMETOOLONG`, raised by whatever
    first looks at it: a check of results_dir, a dataset's file, Hydra's run folder)."""
    try:
        yield
    except RetrofitError as err:
        raise SystemExit(f"error: {err}") from None
    except OSError as err:
        if err.errno != errno.ENAMETOOLONG:
            raise
        raise SystemExit(
            f"error: {bounded(str(err.filename), 120)}: a name in this path is longer than its file system takes "
            "(255 bytes a name, 4096 a path, on most); give a shorter one"
        ) from None


@contextmanager
def exit_on_any_error() -> Iterator[None]:
    """`exit_on_user_error`, and any other exception (a bug) printed with its traceback, then exit 1:
    Hydra turns an exception in a callback into a warning, which would let a failed check pass."""
    try:
        with exit_on_user_error():
            yield
    except Exception:
        traceback.print_exc()
        raise SystemExit(1) from None


def listing(names: Sequence[object], limit: int = LISTED) -> str:
    """`names` for an error message, bounded: the first `limit` and how many more, e.g.
    "['a', 'b'] and 998 more (1000 in all)". A table's columns can number in the millions; a
    message that lists them all costs minutes and gigabytes."""
    shown = [repr(name) if isinstance(name, str) else str(name) for name in names[:limit]]
    more = len(names) - len(shown)
    return f"[{', '.join(shown)}]" + (f" and {more} more ({len(names)} in all)" if more > 0 else "")


def single_line(text: str) -> str:
    """A foreign error's message (tabpfn's, sklearn's: often several lines, a list or a hint below)
    on one line, its lines and runs of spaces joined by one space, and `bounded`."""
    return bounded(" ".join(text.split()))


def bounded(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters (with how many were left out), for quoting a foreign error."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"
