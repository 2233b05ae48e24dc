"""Every architecture at tabpfn's default size -> results/scale.csv (`make scale-check`;
`configs/scale_check.yaml`, `benchmarks.scale`)."""

import logging
import os
import tempfile
from pathlib import Path

from benchmarks.scale.scale_settings import ScaleConfig
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart

SCHEMA = ScaleConfig
AS_OBJECT = False


def run(job: JobStart) -> None:
    """Measure every architecture and variant of `job`, write the table and print it with its goals
    (met or not), where the time goes for each architecture's worst time miss, and the machine's
    load average at the start and the end."""
    from benchmarks.scale.profiles import miss_profiles
    from benchmarks.scale.scale_table import scale_table
    from benchmarks.scale.verdicts import goal_lines, goals_text, refused_lines

    logging.getLogger("retrofit").setLevel(logging.INFO)
    config = ScaleConfig.from_config(job.settings)
    (output,) = job.outputs(config.output)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        table = scale_table(config, Path(folder))
        output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(output, index=False, float_format="%.6g")
        print(table.drop(columns="reason").to_string(index=False, float_format="%.4g"))
        print(f"goals ({goals_text()}):")
        for line in [*goal_lines(table), *refused_lines(table), *miss_profiles(table, config, Path(folder))]:
            print(line)
    load_end = os.getloadavg()
    print(f"load average (1, 5, 15 min): at start {load_start}, at end {load_end} ({os.cpu_count()} cores)")
    print(f"wrote {output}")


if __name__ == "__main__":
    launch("scale_check")
