"""Removal explanations at tabpfn's default size -> results/removal_scale.csv (`make explain-scale`;
`configs/explain_scale.yaml`, `benchmarks.removal_vs_refit.removal_at_scale`)."""

import dataclasses
import logging
import tempfile
from pathlib import Path

from benchmarks.removal_vs_refit.explain_scale_settings import ExplainScaleConfig
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart

SCHEMA = ExplainScaleConfig
AS_OBJECT = False


def run(job: JobStart) -> None:
    """Measure every architecture of `job`, write the table and print it."""
    from benchmarks.removal_vs_refit.removal_at_scale import scale_table

    logging.getLogger("benchmarks").setLevel(logging.INFO)
    logging.getLogger("retrofit.patching").setLevel(logging.WARNING)  # else a line per refit
    settings = dataclasses.replace(ExplainScaleConfig.from_config(job.settings), device=job.device)
    (output,) = job.outputs(settings.output)
    with tempfile.TemporaryDirectory() as folder:
        table = scale_table(settings, Path(folder))
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.drop(columns="reason").to_string(index=False, float_format="%.3g"))
    print(f"wrote {output}")


if __name__ == "__main__":
    launch("explain_scale")
