"""How long each `make` target takes, measured whenever it runs: `results/command_times.csv`.

The Makefile runs every experiment target through

    python -m retrofit.runtimes record <target> -- <command ...>

which runs the command, and only if it exits 0 replaces the target's row in the record with its
wall time, the CPU time of the command and its children (user + system), the machine's CPU count
and 1-minute load average when it started and ended (a load above the CPU count means other work
shared the cores, so the wall time is an upper bound), the commit and the date. A failed command
records nothing and passes its exit status on. After each update the README's table between the
`command-times` markers is rendered again from the record, so the table and the file never
disagree (tests check it). The install is measured by the Makefile's shell and recorded with
`python -m retrofit.runtimes add install --since <epoch seconds at its start>`.

Concurrent targets update the record under an exclusive lock (`fcntl.flock`).
"""

import argparse
import csv
import fcntl
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

from retrofit.io import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "results" / "command_times.csv"
README = ROOT / "README.md"
START, END = "<!-- command-times:start -->", "<!-- command-times:end -->"


@dataclass(frozen=True)
class Runtime:
    """One target's last successful run."""

    target: str
    wall_s: float
    cpu_s: float  # user + system of the command and its children; NaN where not measured
    cpus: int
    load_start: float
    load_end: float
    commit: str
    date: str
    command: str

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


def read(path: Path = RECORD) -> dict[str, Runtime]:
    """Target -> its recorded `Runtime` (empty if there is no record yet)."""
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        return {row["target"]: Runtime.from_row(row) for row in csv.DictReader(handle)}


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def table(runtimes: dict[str, Runtime]) -> str:
    """The README's markdown table: one row per target, fastest first."""
    lines = [
        "| command | wall time | CPU time | load (start, end) / CPUs | measured at |",
        "|---|---|---|---|---|",
    ]
    for rt in sorted(runtimes.values(), key=lambda rt: rt.wall_s):
        cpu = "—" if rt.cpu_s != rt.cpu_s else _duration(rt.cpu_s)
        lines.append(
            f"| `make {rt.target}` | {_duration(rt.wall_s)} | {cpu} | {rt.load_start:.1f}, {rt.load_end:.1f} / "
            f"{rt.cpus} | {rt.commit}, {rt.date} |"
        )
    return "\n".join(lines)


def render_readme(text: str, runtimes: dict[str, Runtime]) -> str:
    """`text` with the part between the markers replaced by `table(runtimes)`."""
    head, sep, rest = text.partition(START)
    _, sep_end, tail = rest.partition(END)
    if not sep or not sep_end:
        raise ValueError(f"README has no {START} ... {END} markers for the command-time table")
    return f"{head}{START}\n{table(runtimes)}\n{END}{tail}"


def update(runtime: Runtime, path: Path, readme: Path) -> None:
    """Replace `runtime.target`'s row in the record and re-render the README's table, under a lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f".{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runtimes = read(path) | {runtime.target: runtime}
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=[f.name for f in fields(Runtime)], lineterminator="\n")
        writer.writeheader()
        writer.writerows(runtimes[name].row() for name in sorted(runtimes))
        write_text_atomic(path, buffer.getvalue())
        if readme.exists():  # rendered from the record as written (rounded), so the two always agree
            write_text_atomic(readme, render_readme(readme.read_text(), read(path)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrofit.runtimes", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="run a command and record its time under a target")
    rec.add_argument("target")
    rec.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    add = sub.add_parser("add", help="record the wall time of work that started at --since (the install)")
    add.add_argument("target")
    add.add_argument("--since", type=float, required=True, help="its start, in seconds since the epoch")
    args = parser.parse_args(argv)
    if args.action == "add":
        wall = time.time() - args.since  # the load at its start was not taken: the current one stands in
        update(Runtime.ending_now(args.target, wall, float("nan"), os.getloadavg()[0], args.target), RECORD, README)
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("record needs a command after --")
    status, runtime = measure(args.target, command)
    if status == 0:
        update(runtime, RECORD, README)
    return status


if __name__ == "__main__":
    sys.exit(main())
