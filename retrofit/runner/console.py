"""What a run shows on the console: one progress bar per job over its units, notices once, how many
units were reused, a summary at the end.

Per-unit detail (retrofit reports, RMSEs) goes to each job's log file; the console handler of the
sweep's configs shows `log_level` and above (WARNING by default; `-v` or `log_level=INFO` shows
the detail too). Each job's bar (`unit_bar`, drawn by `retrofit.runner.case.run_case`) counts its
units, reused ones first; the launcher itself reports the jobs.
"""

import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tqdm.auto import tqdm

log = logging.getLogger(__name__)


def unit_bar(label: str, total: int, reused: int) -> tqdm:
    """A bar over the `total` units of the case `label`, `reused` of them already done."""
    return tqdm(total=total, initial=reused, unit="unit", desc=label, dynamic_ncols=True, leave=False)


def reused(count: int, total: int) -> str:
    """The line saying how many of a run's units came from the store."""
    return f"{count} of {total} units reused from the store (same identity), {total - count} computed"


class Notices(logging.Handler):
    """Collects the runner's INFO notices while cases are built (e.g. closed variants not run on a
    host), so each distinct one is said once instead of once per job."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message not in self.messages:
            self.messages.append(message)


NOTICE_LOGGERS = ("retrofit.runner.config", "retrofit.data")
"""The loggers whose INFO messages are notices about the whole run (variants not run on a host, rows
dropped from a table), said once however many jobs repeat them."""


@contextmanager
def collected_notices() -> Iterator[list[str]]:
    """The block's distinct notices (`NOTICE_LOGGERS`), kept off the console while it runs (and
    logged once at INFO on this module's logger, i.e. into the run's log file, at the end)."""
    notices = Notices()
    loggers = [logging.getLogger(name) for name in NOTICE_LOGGERS]
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(notices)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield notices.messages
    finally:
        for logger, (level, propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(notices)
            logger.setLevel(level)
            logger.propagate = propagate
        for message in notices.messages:
            log.info(message)


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
"""Set to `1` by the sweep's entry point: Hydra then re-raises what it would otherwise print as a
stack trace (an interrupt inside its job loop, a config that does not compose), so `entry_errors`
can say it in one line."""


@contextmanager
def entry_errors() -> Iterator[None]:
    """Around an entry point's Hydra `main` (with `FULL_ERROR=1`): Ctrl-C anywhere as in
    `exit_on_interrupt`; a config that does not compose (an unknown group option, a malformed or
    unsafe YAML file such as a `!!python/object` tag, which is never constructed) as one line
    `error: ...`, exit status 1. Any other error keeps its traceback: it is a bug, not an input."""
    import yaml
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    with exit_on_interrupt():
        try:
            yield
        except (HydraException, OmegaConfBaseException, yaml.YAMLError) as err:
            if _interrupt_in(err):
                raise
            sys.stderr.write(f"error: {' '.join(str(err).split())} (fix the config or the override it names)\n")
            raise SystemExit(1) from None


def say(text: str = "") -> None:
    """Print `text` to the console without breaking a progress bar."""
    tqdm.write(text)


def report(headline: str, written: Sequence[Path], log_files: str, notices: Sequence[str]) -> None:
    """The end of a run: the notices (once), the headline table, the files written and where the
    per-unit detail is."""
    for notice in notices:
        say(f"note: {notice}")
    say("")
    say(headline)
    say("")
    say("wrote:")
    for path in written:
        say(f"  {path}")
    say(f"per-unit detail: {log_files}")
