"""The GPU record: the main job's grid and the scale check on CUDA, checked row by row against the
CPU record.

    make gpu-record                                    # -> results/gpu/ (RETROFIT_RECORD=1)
    python -m benchmarks.gpu_record --out $OUT/gpu     # the same without make (a GPU node, no venv)

Refused in one line, before anything runs, where torch sees no CUDA device. Otherwise, into `--out`:

- `machine.txt`: the GPU (`torch.cuda.get_device_name`), torch, its CUDA, the driver, the CPU;
- the sweep's files (`retrofit_rmse.csv`, ...): `experiments/sweep.py -m +experiment=paper_table
  device=cuda` through `--jobs` joblib workers sharing the GPU, run in `--work` (`outputs/gpu/`:
  its unit store and results, outside the committed results/, whose sweep must reproduce the CPU
  rows to 1e-5) and copied into `--out`;
- `scale.csv`: `experiments/scale_check.py device=cuda` (unless `--no-scale`);
- `command_times.csv`: each command's wall and CPU time (`retrofit.runtimes`);
- `cpu_agreement.csv`: every unit of the GPU grid against the CPU record (`--reference`,
  `results/retrofit_rmse.csv`; `retrofit.results.reproduction.across_devices`): equal within 1e-5
  relative, or within its host's noise floor (the largest over its sources on the CPU and on this
  GPU, `retrofit.runner.finish.noise_floors`), else it differs.

The exit status is 0 only if every command succeeded and every unit agrees; the last line says how
many units are equal, within the floor, and differ.
"""

import argparse
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from retrofit.errors import exit_on_user_error
from retrofit.record_guard import check_record_outputs

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "retrofit_rmse.csv"
WORK = ROOT / "outputs" / "gpu"
"""Where the GPU grid runs (its unit store `.cache` and results `sweep/`) before its files are copied."""
"""The CPU record the GPU grid is checked against."""
NO_CUDA = 2
"""The exit status where torch sees no CUDA device."""


def cuda_or_exit() -> str:
    """The CUDA device's name; where there is none, one line on stderr and exit `NO_CUDA`."""
    import torch

    if not torch.cuda.is_available():
        sys.stderr.write(
            f"error: the GPU record needs a CUDA device and torch {torch.__version__} sees none "
            "(run it on a machine with a GPU and a CUDA build of torch)\n"
        )
        raise SystemExit(NO_CUDA)
    return torch.cuda.get_device_name()


def machine_text() -> str:
    """What the record ran on: GPU, torch and CUDA, the driver (`nvidia-smi`, where present), the CPU."""
    import torch

    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        smi = "nvidia-smi not found"
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    return "\n".join(
        [
            f"gpu: {torch.cuda.get_device_name()}",
            f"nvidia-smi: {smi}",
            f"torch: {torch.__version__} (cuda {torch.version.cuda})",
            f"python: {platform.python_version()}",
            f"cpu: {cpu} ({os.cpu_count()} cores)",
        ]
    )


def timed(name: str, command: Sequence[str], times: Path) -> int:
    """Run `command` in the repository root under `retrofit.runtimes` (its time goes to `times` as
    row `name` when it succeeds); its exit status."""
    runtimes = [sys.executable, "-m", "retrofit.runtimes", "record", name, "--to", str(times), "--"]
    print(f"$ {' '.join(command)}", flush=True)
    return subprocess.run([*runtimes, *command], cwd=ROOT, check=False).returncode


def agreement(out: Path, reference: Path, device: str) -> tuple[bool, str]:
    """Check `<out>/retrofit_rmse.csv` against `reference` (`across_devices`), write
    `<out>/cpu_agreement.csv`, and say whether every unit agrees and the counts in one line."""
    from retrofit.results.reproduction import across_devices, read_results
    from retrofit.runner.finish import noise_floors

    floors: dict[str, float] = {}
    for (host, on), floor in noise_floors().items():
        if on in ("cpu", device):
            floors[host] = max(floors.get(host, 0.0), floor)
    table = across_devices(
        read_results(out / "retrofit_rmse.csv", "the GPU grid"), read_results(reference, "the CPU record"), floors
    )
    table.to_csv(out / "cpu_agreement.csv", index=False)
    counts = table["verdict"].value_counts()
    for _, row in table[~table["verdict"].isin(["equal", "within floor"])].head(20).iterrows():
        print(f"  {row.verdict}: {row.unit} {row.columns}")
    said = ", ".join(
        f"{counts.get(v, 0)} {v}" for v in ("equal", "within floor", "differs", "only new", "only reference")
    )
    ok = set(counts.index) <= {"equal", "within floor"}
    return ok, f"{len(table)} units on {device} against {reference.name}: {said}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_record", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder the record goes to (make: results/gpu)")
    parser.add_argument("--jobs", type=int, default=4, help="joblib workers of the sweep sharing the GPU (default 4)")
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="the CPU record to check against")
    parser.add_argument("--work", type=Path, default=WORK, help="where the sweep runs (default outputs/gpu)")
    parser.add_argument("--no-scale", action="store_true", help="leave out the scale check")
    args = parser.parse_args(argv)
    device = cuda_or_exit()
    out, work = args.out.resolve(), args.work.resolve()
    check_record_outputs([out])  # results/ only from make gpu-record
    out.mkdir(parents=True, exist_ok=True)
    (out / "machine.txt").write_text(machine_text() + "\n")
    times = out / "command_times.csv"
    python = sys.executable
    sweep = [python, "experiments/sweep.py", "-m", "+experiment=paper_table", "device=cuda"]
    sweep += [f"results_dir={work / 'sweep'}", f"cache_dir={work / '.cache'}"]
    sweep += ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.jobs}"]
    failed = [name for name, command in [("gpu-sweep", sweep)] if timed(name, command, times) != 0]
    for file in (work / "sweep").glob("*") if not failed else ():
        if file.is_file():
            shutil.copy2(file, out / file.name)
    if not args.no_scale:
        scale = [python, "experiments/scale_check.py", "device=cuda", f"output={out / 'scale.csv'}"]
        failed += ["gpu-scale-check"] if timed("gpu-scale-check", scale, times) != 0 else []
    agrees, line = agreement(out, args.reference, device) if (out / "retrofit_rmse.csv").is_file() else (False, "")
    print(line or f"no {out / 'retrofit_rmse.csv'}: the sweep wrote nothing to check")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 0 if agrees and not failed else 1


if __name__ == "__main__":
    with exit_on_user_error():  # a refused output folder: one line
        sys.exit(main())
