"""What a sweep shows on the console: one progress bar over units, notices once, a summary at the end.

Per-unit detail (retrofit reports, RMSEs) goes to each job's log file; the console handler of the
sweep's configs shows `log_level` and above (WARNING by default; `-v` or `log_level=INFO` shows
the detail too).

The bar (`UnitProgress`) counts finished unit files of the sweep's cases in the unit store, so
it works whatever runs the jobs (this process, joblib workers, submitit): a unit counts once its
file is current, whether it was before the sweep began or a job wrote it since. Its label is the
case each running job works on and its stage, which each job writes to a marker file
(`job_marker`) under the sweep's output directory.
"""

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from retrofit.io import write_text_atomic
from retrofit.runner.units import UnitStore

if TYPE_CHECKING:  # the report and the notices need no case, so the aggregation imports no model
    from retrofit.runner.case import Case

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
MARKERS = ".running"
"""The folder (under the sweep's or run's output directory) of the running jobs' marker files."""


def case_label(case: "Case") -> str:
    return f"{case.host}/{case.dataset.name}/seed={case.seed}"


class _Stage(logging.Handler):
    """Writes each message of the case runner's log to a marker file: the job's current stage."""

    def __init__(self, path: Path, label: str) -> None:
        super().__init__(logging.INFO)
        self.path, self.label = path, label

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        stage = message.split(": ", 1)[1] if message.startswith(self.label) else message
        write_text_atomic(self.path, f"{self.label}: {stage[:60]}")


@contextmanager
def job_marker(markers_dir: Path, case: "Case") -> Iterator[None]:
    """While the block runs, `<markers_dir>/<case>.txt` says which case this job runs and its stage."""
    label = case_label(case)
    path = Path(markers_dir) / f"{label.replace('/', '__')}.{os.getpid()}.txt"  # one per job
    write_text_atomic(path, f"{label}: starting")
    handler = _Stage(path, label)
    runner_log = logging.getLogger("retrofit.runner.case")
    runner_log.addHandler(handler)
    try:
        yield
    finally:
        runner_log.removeHandler(handler)
        path.unlink(missing_ok=True)


class UnitProgress:
    """A tqdm bar over the units of `cases`, updated from the unit store by a background thread."""

    def __init__(self, cases: Sequence["Case"], markers_dir: Path) -> None:
        self.markers_dir = Path(markers_dir)
        self.paths = {UnitStore(c.runs_dir).path(c.key(u)): c for c in cases for u in c.units}
        self.done_before = {
            UnitStore(c.runs_dir).path(key)
            for c in cases
            if not c.overwrite
            for key, stamp in c.fingerprints().items()
            if UnitStore(c.runs_dir).finished(key, stamp) is not None
        }
        self.start = time.time()
        self.bar = tqdm(total=len(self.paths), unit="unit", desc="starting", dynamic_ncols=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "UnitProgress":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._poll(final=True)
        self.bar.close()

    def _done(self) -> int:
        def finished(path: Path) -> bool:
            if path in self.done_before:
                return True
            try:
                return path.stat().st_mtime >= self.start
            except FileNotFoundError:
                return False

        return sum(finished(path) for path in self.paths)

    def _poll(self, final: bool = False) -> None:
        self.bar.n = self._done()
        labels = [] if final else sorted(p.read_text() for p in self.markers_dir.glob("*.txt") if p.is_file())
        self.bar.set_description_str("; ".join(labels) if labels else ("done" if final else "waiting"), refresh=False)
        self.bar.refresh()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self._poll()
            except OSError:  # a marker removed while read: the next poll reads the rest
                continue


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
