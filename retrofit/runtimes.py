"""How long a `make` target takes, measured whenever it succeeds: one CSV row per target.

The Makefile runs targets through

    python -m retrofit.runtimes record <target> --to <csv> -- <command ...>

which runs the command and, only if it exits 0, replaces the target's row of `<csv>` with its wall
time, the CPU time of the command and its children (user + system), the machine's CPU count and
1-minute load average when it started and ended (a load above the CPU count means other work
shared the cores, so the wall time is an upper bound), the commit and the date. A failed command
records nothing and passes its exit status on. The install is measured by the Makefile's shell and
recorded with `python -m retrofit.runtimes add install --to <csv> --since <epoch seconds>`.

Where the rows go is the Makefile's choice, and it keeps git clean: the targets that write the
committed `results/` (the record targets) record into `results/command_times.csv`, every other
target (install, tests, lint, compare, ...) into the untracked `outputs/command_times.csv`. Nothing
here writes prose: the README links the file. Concurrent targets update a file under an exclusive
lock (`filelock`).
"""

import argparse
import csv
import io
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from retrofit.io import write_text_atomic
from retrofit.results.record import column, column_docs

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Runtime:
    """One target's last successful run."""

    target: str = column("label", "the make target")
    wall_s: float = column("s", "wall seconds of its last successful run")
    cpu_s: float = column("CPU s", "user + system seconds of the command and its children (NaN: not measured)")
    cpus: int = column("count", "CPU cores of the machine")
    load_start: float = column("load", "1-minute load average when it started (above `cpus`: shared cores)")
    load_end: float = column("load", "1-minute load average when it ended")
    commit: str = column("git commit", "the checkout's commit")
    date: str = column("UTC, minutes", "when it ended (`YYYY-MM-DD HH:MM`)")
    command: str = column("text", "the command run")

    def row(self) -> dict[str, str]:
        return {
            key: (f"{value:.1f}" if isinstance(value, float) else str(value)) for key, value in asdict(self).items()
        }

    @classmethod
    def ending_now(cls, target: str, wall_s: float, cpu_s: float, load_start: float, command: str) -> "Runtime":
        """A run of `target` that ends now: the CPU count, end load, commit and date stamped here."""
        return cls(
            target=target,
            wall_s=wall_s,
            cpu_s=cpu_s,
            cpus=os.cpu_count() or 1,
            load_start=load_start,
            load_end=os.getloadavg()[0],
            commit=_commit(),
            date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
            command=command,
        )

    @classmethod
    def from_row(cls, row: dict[str, str]) -> "Runtime":
        types = {f.name: f.type for f in fields(cls)}
        return cls(**{key: types[key](row[key]) for key in types})


COLUMN_DOCS = column_docs(Runtime)
"""Column -> (unit, meaning) of a runtimes CSV (`results/command_times.csv`), in order."""


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(target: str, command: Sequence[str]) -> tuple[int, Runtime]:
    """Run `command`; its exit status and its `Runtime` under `target`."""
    load_start, cpu_start, start = os.getloadavg()[0], _children_cpu_s(), time.perf_counter()
    status = subprocess.call(list(command))
    wall = time.perf_counter() - start
    return status, Runtime.ending_now(target, wall, _children_cpu_s() - cpu_start, load_start, " ".join(command))


def read(path: Path) -> dict[str, Runtime]:
    """Target -> its recorded `Runtime` (empty if there is no record yet)."""
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        return {row["target"]: Runtime.from_row(row) for row in csv.DictReader(handle)}


def update(runtime: Runtime, path: Path) -> None:
    """Replace `runtime.target`'s row of the record at `path` (created with its folder), under a lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.parent / f".{path.name}.lock"):
        runtimes = read(path) | {runtime.target: runtime}
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=[f.name for f in fields(Runtime)], lineterminator="\n")
        writer.writeheader()
        writer.writerows(runtimes[name].row() for name in sorted(runtimes))
        write_text_atomic(path, buffer.getvalue())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrofit.runtimes", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="run the command after -- and record its time under a target")
    rec.add_argument("target")
    rec.add_argument("--to", type=Path, required=True, help="the CSV the row goes to")
    add = sub.add_parser("add", help="record the wall time of work that started at --since (the install)")
    add.add_argument("target")
    add.add_argument("--to", type=Path, required=True, help="the CSV the row goes to")
    add.add_argument("--since", type=float, required=True, help="its start, in seconds since the epoch")
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: len(argv) - len(command) - ("--" in argv)])
    if args.action == "add":
        wall = time.time() - args.since  # the load at its start was not taken: the current one stands in
        update(Runtime.ending_now(args.target, wall, float("nan"), os.getloadavg()[0], args.target), args.to)
        return 0
    if not command:
        parser.error("record needs a command after --")
    status, runtime = measure(args.target, command)
    if status == 0:
        update(runtime, args.to)
    return status


if __name__ == "__main__":
    sys.exit(main())
