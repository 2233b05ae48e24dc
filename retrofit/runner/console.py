"""What a run shows on the console: one progress bar per job over its units, notices once, how many
units were reused, a summary at the end.

Per-unit detail (retrofit reports, RMSEs) goes to each job's log file; the console handler of the
sweep's configs shows `log_level` and above (WARNING by default; `-v` or `log_level=INFO` shows
the detail too). Each job's bar (`unit_bar`, drawn by `retrofit.runner.case.run_case`) counts its
units, reused ones first; the launcher itself reports the jobs.
"""

import logging
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
    return f"{count} of {total} units reused (same identity), {total - count} computed"


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


def say(text: str = "") -> None:
    """Print `text` to the console without breaking a progress bar."""
    tqdm.write(text)


def report(headline: str, written: Sequence[Path], log_files: str, notices: Sequence[str], reused: str) -> None:
    """The end of a run: the notices (once), the headline table, the files written, where the
    per-unit detail is (`log_files`, the real paths) and how many units were reused (`reused`)."""
    for notice in notices:
        say(f"note: {notice}")
    say(f"\n{headline}\n\nwrote:")
    for path in written:
        say(f"  {path}")
    say(f"per-unit detail: {log_files}; {reused}")


def job_logs(sweep_dir: Path, job_name: str) -> str:
    """The log files of a multirun's jobs under `sweep_dir` (`<job>/<job_name>.log`), as paths."""
    logs = sorted(Path(sweep_dir).glob(f"*/{job_name}.log"), key=lambda path: (len(str(path)), str(path)))
    if len(logs) <= 2:
        return ", ".join(map(str, logs)) or f"no job log under {sweep_dir}"
    return f"{len(logs)} job logs, {logs[0]} ... {logs[-1]}"
