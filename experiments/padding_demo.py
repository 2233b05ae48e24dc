"""What `predict_many`'s padding does to a host that is not O-closed -> results/padding_demo.csv
(`make padding-demo`; `configs/padding_demo.yaml`).

For each variant, every case's fitted regressor is retrofitted, the members of all cases are
bucketed and padded as `retrofit.predict_many` pads them (`bucket_members` under its bounds; a
case that shares no bucket runs through its buckets here too, where predict_many would call its
own predict), and each bucket runs through
the variant's model. An o_closed model is told which rows and columns are padding; any other
model is fed the padding as ordinary zeros, which is all the stock host can be given (done here
deliberately: `predict_many` refuses such a model). Each case's predictions are then compared
with its own `predict`.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from omegaconf import MISSING

from benchmarks.fitted_cases import CasesConfig, fitted_cases
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.labels import DEVICE_DOC

if TYPE_CHECKING:  # the models come with `run`, not with the schema
    import pandas as pd

    from retrofit.fitting import FittedCase

COLUMN_DOCS = {
    "host": ("label", "host label"),
    "device": DEVICE_DOC,
    "variant": ("label", "retrofit variant (`baseline`: the stock host fed the padding as zeros)"),
    "dataset": ("label", "dataset name"),
    "seed": ("integer", "split and `random_state` seed of the case"),
    "n_test": ("rows", "test rows of the case"),
    "max_abs_delta_pred": ("target units", "largest |padded − own prediction| over the case's test rows"),
    "max_abs_pred": ("target units", "largest |own prediction|"),
    "rel_delta_pred": ("ratio", "max_abs_delta_pred / max_abs_pred"),
}
"""Column -> (unit, meaning) of `results/padding_demo.csv` (one row per variant and case), in order."""
COLUMNS = tuple(COLUMN_DOCS)


@dataclass
class PaddingDemoConfig(CasesConfig):
    """The schema of `configs/padding_demo.yaml` (each key's role is written there)."""

    variants: list[str] = MISSING
    max_padding: float = MISSING
    output: str = MISSING


SCHEMA = PaddingDemoConfig


def run(job: JobStart) -> None:
    """Measure how padding moves each variant's predictions on every case of `job`; write and print it."""
    settings: PaddingDemoConfig = job.settings
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    (output,) = job.outputs(settings.output)
    cases = fitted_cases(job)
    table = padding_effect(settings.host, cases, settings.variants, max_padding=settings.max_padding)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3g"))
    print(table.groupby(["variant", "dataset"], sort=False)["rel_delta_pred"].max().to_string(float_format="%.3g"))
    print(f"wrote {output}")


def padding_effect(
    host: str, cases: "Sequence[FittedCase]", variants: Sequence[str], *, max_padding: float
) -> "pd.DataFrame":
    """One row per variant and case (see `COLUMNS`)."""
    import numpy as np
    import pandas as pd
    import torch

    from retrofit.adapters import OClosedModel
    from retrofit.batching import bucket_members, cell_limit, decode_members, member_inputs, pad_members
    from retrofit.hosts.device import device_label
    from retrofit.patching import retrofit

    rows = []
    for variant in variants:
        pairs = [(retrofit(case.regressor, variant), case.X_test) for case in cases]
        members = [m for index, (regressor, X) in enumerate(pairs) for m in member_inputs(index, regressor, X)]
        outputs: dict[tuple[int, int], torch.Tensor] = {}
        for bucket in bucket_members(members, max_padding=max_padding, max_cells=cell_limit(pairs[0][0])):
            padded = pad_members(bucket)
            model = pairs[bucket[0].pair][0].models_[0]
            absence = (
                {"row_presence": padded["row_presence"], "column_presence": padded["column_presence"]}
                if isinstance(model, OClosedModel)
                else {}
            )
            with torch.inference_mode():
                logits_TBO = model(padded["x"], padded["y"], **absence).float()
            for b, member in enumerate(bucket):
                outputs[(member.pair, member.member)] = logits_TBO[: member.shape[1], b]
        for index, ((regressor, X_test), case) in enumerate(zip(pairs, cases, strict=True)):
            n_members = len(regressor.executor_.ensemble_members)
            padded_pred = decode_members(regressor, [outputs[(index, m)] for m in range(n_members)])
            own = regressor.predict(X_test)
            delta, scale = float(np.max(np.abs(padded_pred - own))), float(np.max(np.abs(own)))
            values = (
                host,
                device_label(regressor.devices_[0]),
                variant,
                case.name,
                case.seed,
                len(own),
                delta,
                scale,
                delta / scale,
            )
            rows.append(dict(zip(COLUMNS, values, strict=True)))
    return pd.DataFrame(rows, columns=list(COLUMNS))


if __name__ == "__main__":
    launch("padding_demo")
