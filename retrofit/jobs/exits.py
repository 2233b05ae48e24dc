"""How a command ends when Hydra is in the way: a config that does not compose in one line, Ctrl-C
as `interrupted` with exit status `INTERRUPTED` (`entry_errors`, around every entry point's Hydra
`main`; `retrofit.jobs.launch`)."""

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import yaml
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

INTERRUPTED = 130
"""The exit status of a run stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""


def _interrupt_in(err: BaseException | None) -> bool:
    """Whether `err` is a KeyboardInterrupt or was raised while one was handled (a library's
    clean-up can fail on the half-torn state and hide the interrupt behind its own error)."""
    while err is not None:
        if isinstance(err, KeyboardInterrupt):
            return True
        err = err.__cause__ or err.__context__
    return False


@contextmanager
def exit_on_interrupt() -> Iterator[None]:
    """Ctrl-C in the block: `interrupted` and how to resume on stderr, exit status `INTERRUPTED`,
    no traceback. Finished units are in the store; the same command resumes from them."""
    try:
        yield
    except BaseException as err:
        if not _interrupt_in(err):
            raise
        sys.stderr.write("\ninterrupted: finished units are kept; run the same command again to resume\n")
        raise SystemExit(INTERRUPTED) from None


FULL_ERROR = "HYDRA_FULL_ERROR"
"""Set to `1` by every entry point (`retrofit.jobs.launch`): Hydra then re-raises what it would otherwise print as a
stack trace (an interrupt inside its job loop, a config that does not compose), so `entry_errors`
can say it in one line."""


@contextmanager
def entry_errors() -> Iterator[None]:
    """Around an entry point's Hydra `main` (with `FULL_ERROR=1`): Ctrl-C anywhere as in
    `exit_on_interrupt`; a config that does not compose (an unknown group option, a malformed or
    unsafe YAML file such as a `!!python/object` tag, which is never constructed) as one line
    `error: ...`, exit status 1. Any other error keeps its traceback: it is a bug, not an input."""
    with exit_on_interrupt():
        try:
            yield
        except (HydraException, OmegaConfBaseException, yaml.YAMLError) as err:
            if _interrupt_in(err):
                raise
            sys.stderr.write(f"error: {' '.join(str(err).split())} (fix the config or the override it names)\n")
            raise SystemExit(1) from None
