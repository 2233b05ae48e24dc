"""Model cards for shipped hosts, rendered from what the checkpoint itself records.

The `host_card` header of a host file holds its training record (architecture, parameters,
curriculum, steps, minutes, evaluation history); the quality table comes from
`experiments/host_quality.py`. Nothing in a card is typed by hand.
"""

import json
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from safetensors import safe_open


def read_header(path: Path) -> dict:
    """The JSON header fields of a host checkpoint (config, architecture_name, host_card, ...)."""
    with safe_open(str(path), framework="pt") as fh:
        return {k: json.loads(v) for k, v in (fh.metadata() or {}).items()}


def plot_history(history: list[dict], out: Path) -> Path:
    """Validation NLL and R² against training minutes, one line per validation set.

    Draws on a bare `Figure` (no pyplot, no global backend switch), so importing this module and
    calling it leave matplotlib's state untouched.
    """
    frame = pd.DataFrame(history)
    fig = Figure(figsize=(9, 3.2))
    ax_nll, ax_r2 = fig.subplots(1, 2)
    for col in [c for c in frame.columns if c.endswith("_nll")]:
        ax_nll.plot(frame["minutes"], frame[col], marker=".", label=col.removesuffix("_nll"))
    for col in [c for c in frame.columns if c.endswith("_r2")]:
        ax_r2.plot(frame["minutes"], frame[col], marker=".", label=col.removesuffix("_r2"))
    ax_nll.set(xlabel="training minutes (1 CPU thread)", ylabel="held-out prior NLL")
    ax_r2.set(xlabel="training minutes (1 CPU thread)", ylabel="held-out prior R²")
    for ax in (ax_nll, ax_r2):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return out


def _curriculum_table(curriculum: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"from_step": stage["from_step"], **bucket} for stage in curriculum for bucket in stage["buckets"]]
    ).fillna({"weight": 1.0})


def _notes_section(notes: list[str]) -> list[str]:
    return ["## Training notes", "", *(f"- {note}" for note in notes), ""] if notes else []


def _measured_sections(quality: pd.DataFrame | None, suite: pd.DataFrame | None) -> list[str]:
    """The card's measured sections: its ratios on the record's tables (`quality`) and on the suite
    (`suite`), each left out where not given."""
    lines = []
    if quality is not None:
        lines += [
            "## Quality on real data (RMSE ratios; `results/host_quality.csv`)",
            "",
            quality.to_markdown(index=False),
            "",
        ]
    if suite is not None:
        lines += [
            "## On the suite's real tables (geometric-mean RMSE ratios; `results/suite/suite_summary.csv`)",
            "",
            suite.to_markdown(index=False, floatfmt=".3f"),
            "",
        ]
    return lines


def render_card(
    name: str, path: Path, quality: pd.DataFrame | None, out_dir: Path, suite: pd.DataFrame | None = None
) -> Path:
    """Write `<out_dir>/<name>.md` (+ its curve PNG) for the host file at `path`; `quality`: its
    ratios on the record's tables, `suite`: its rows of the suite's summary (both halves)."""
    header = read_header(path)
    card = header["host_card"]
    out_dir.mkdir(parents=True, exist_ok=True)
    curve = plot_history(card["history"], out_dir / f"{name}_curve.png")
    history = pd.DataFrame(card["history"])
    leading = ["step", "minutes", "train_loss"]
    history = history[[*leading, *sorted(c for c in history if c not in leading)]]
    arch = {k: v for k, v in header["config"].items() if v is not None}
    lines = [
        f"# Host `{name}` — model card",
        "",
        f"- file: `retrofit/hosts/{path.name}` (tabpfn safetensors checkpoint, no pickle)",
        f"- architecture: `{header['architecture_name']}`, {card['params']:,} parameters",
        f"- training: {card['steps']:,} steps, {card['train_minutes']} minutes of one CPU thread, "
        f"schedule-free AdamW lr {card['lr']}",
        f"- prior: {card['prior']}",
        f"- bucket borders: quantiles of prior targets with a {card.get('border_tail_share', 0.0)} uniform "
        f"share on [-8, 8]; re-drawn at steps {card.get('reborder_steps') or 'never'}",
        f"- stored inference preprocessing: {[t['name'] for t in header['inference_config']['PREPROCESS_TRANSFORMS']]}",
        "",
        "## What it is and is not",
        "A small TabPFN-architecture regressor pretrained by this project on a synthetic prior, so "
        "that retrofit numbers stand on a host that really does in-context regression. It is not "
        "Prior Labs' TabPFN: it is orders of magnitude smaller and trained for minutes, not weeks.",
        "",
        "## Architecture config",
        "```json",
        json.dumps(arch, indent=1, sort_keys=True),
        "```",
        "",
        *_notes_section(card.get("notes", [])),
        "## Curriculum (shape buckets drawn per step, by weight, from `from_step` on)",
        "",
        _curriculum_table(card["curriculum"]).to_markdown(index=False),
        "",
        "## Held-out prior loss and R² during training",
        f"![curve]({curve.name})",
        "",
        history.to_markdown(index=False),
        "",
    ]
    lines += _measured_sections(quality, suite)
    out = out_dir / f"{name}.md"
    out.write_text("\n".join(lines))
    return out
