"""Two-block hosts under null insertion -> results/ablation.{csv,md} (`make ablation`;
`configs/ablation.yaml`, `benchmarks.null_insertion`)."""

from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart

NOTE = (
    "OA-only is exact in block 1 (OAttention ignores the null token) but its FFN and LayerNorm bias\n"
    "re-activate the null token, which leaks from block 2 on. Paper (its own host): OA-only ~ 7.98,\n"
    "OTransformer ~ 0; the OA-only magnitude depends on the host's weights, the zero does not."
)


@dataclass
class AblationConfig:
    """The schema of `configs/ablation.yaml` (each key's role is written there); the keys after the
    outputs are `benchmarks.null_insertion.ablation_table`'s arguments (`device` resolved first)."""

    output_csv: str = MISSING
    output_md: str = MISSING
    seed: int = MISSING
    d_model: int = MISSING
    n_heads: int = MISSING
    d_ffn: int = MISSING
    n_blocks: int = MISSING
    bias_std: float = MISSING
    batch: int = MISSING
    n_old: int = MISSING
    n_nulls: list[int] = MISSING
    tau: float = MISSING
    eps_den: float = MISSING
    device: str = MISSING


SCHEMA = AblationConfig


def run(job: JobStart) -> None:
    """Measure the ablation `job` describes, write its CSV and Markdown table and print the table."""
    from benchmarks.null_insertion import ablation_markdown, ablation_table

    settings: AblationConfig = job.settings
    csv_path, md_path = job.outputs(settings.output_csv, settings.output_md)
    keys = [key for key in AblationConfig.__dataclass_fields__ if not key.startswith("output") and key != "device"]
    table = ablation_table(**{key: getattr(settings, key) for key in keys}, device=job.device)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(csv_path, index=False, float_format="%.6g")
    md_path.write_text(
        "# Null insertion into two-block hosts: L_inf change of the old tokens' states\n\n"
        f"Same random weights in every host (`configs/ablation.yaml`, seed {settings.seed}).\n{NOTE}\n\n"
        + ablation_markdown(table)
    )
    print(md_path.read_text())
    print(f"wrote {csv_path} and {md_path}")


if __name__ == "__main__":
    launch("ablation")
