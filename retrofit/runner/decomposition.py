"""The retrofit cost split into its sink and presence effects.

A retrofitted OAttention departs from the stock host in two ways: presences
p = ||h||² / (tau + ||h||²) below 1 (tau = c · median ||h||² of the context carriers), and the sink
eps_den. With the paper's `absolute` sink, query i gives the sink the share eps_den / (eps_den + W_i),
which takes the mass where a trained host puts every logit of a query far below log eps_den; the
`relative` sink sits at log eps_den + log W_i, a constant share eps_den / (1 + eps_den) whatever
the logits. The arms of `retrofit/configs/decomposition/sink_presence.yaml` run each listed variant with
overrides that switch the two effects on or off (c as in the variant, or so small that every
non-null presence rounds to 1; absolute or relative sink). They are extra units of every case, on
the case's one fit, so every arm is matched against the same baseline prediction.

`Decomposition.units` adds the arms' units to a case; `decomposition_frame` picks the arm rows out
of the aggregated results by the settings each unit actually ran (`tau_c`, `eps_den`, `eps_mode`
read off the patched model); `write_decomposition` writes `decomposition.csv` (one row per host ×
dataset × seed × variant × arm), `decomposition.md` (mean ΔRMSE % per host × variant × arm with the
main table's bootstrap 95 % CI) and `decomposition.png`.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from retrofit.errors import RetrofitError, RunnerError
from retrofit.io import write_png, write_text_atomic
from retrofit.runner.aggregate import DISTRIBUTION_DELTAS, bootstrap_ci, mean_with_ci, write_csv
from retrofit.runner.bootstrap import N_BOOTSTRAP
from retrofit.runner.case import UnitSpec
from retrofit.runner.units import hparams_key
from retrofit.variants import resolve_variant

ARMS_FILE = Path(str(files("retrofit.configs") / "decomposition" / "sink_presence.yaml"))
"""The arms of the paper table's decomposition (read by the sweep and by the aggregation)."""
SETTINGS = ["tau_c", "eps_den", "eps_mode"]
"""The unit-row columns that identify an arm: the settings the patched model ran with."""
COLUMNS = [
    "host",
    "dataset",
    "seed",
    "variant",
    "arm",
    *SETTINGS,
    "rmse",
    "baseline_rmse",
    "delta_rmse_pct",
    "delta_nll",
    "delta_crps_pct",
    "delta_coverage_90",
]


@dataclass
class DecompositionConfig:
    """The schema of `decomposition/*.yaml` (in `retrofit/configs/`): `variants` to split, and `arms` (name ->
    retrofit hyper-parameter overrides; `{}` is the variant's own settings)."""

    variants: list[str] = MISSING
    arms: dict[str, Any] = MISSING


@dataclass(frozen=True)
class Decomposition:
    """Validated arms: every (variant, arm) resolves, and no two arms of a variant run the same settings."""

    variants: tuple[str, ...]
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_node(cls, node: DictConfig | dict) -> "Decomposition":
        """From a config node (`DecompositionConfig`); RunnerError naming a bad key or arm."""
        try:
            cfg = OmegaConf.to_container(OmegaConf.merge(OmegaConf.structured(DecompositionConfig), node), resolve=True)
        except OmegaConfBaseException as err:
            raise RunnerError(f"decomposition: bad key {err.full_key!r} ({str(err).splitlines()[0]})") from None
        decomposition = cls(tuple(cfg["variants"]), {name: dict(arm or {}) for name, arm in cfg["arms"].items()})
        for variant in decomposition.variants:
            settings = [decomposition.settings(variant, arm) for arm in decomposition.arms]
            if len(set(settings)) != len(settings):
                raise RunnerError(f"decomposition: two arms of {variant!r} run the same settings {settings}")
        return decomposition

    @classmethod
    def load(cls, path: Path = ARMS_FILE) -> "Decomposition":
        return cls.from_node(OmegaConf.load(path))

    def settings(self, variant: str, arm: str) -> tuple[float, float, str]:
        """(tau_c, eps_den, eps_mode) that `variant` runs with in `arm`; RunnerError if it does not
        resolve or its tau is not calibrated (arms are told apart by c)."""
        try:
            resolved = resolve_variant(variant, **self.arms[arm])
        except RetrofitError as err:
            raise RunnerError(f"decomposition arm {arm!r} of {variant!r}: {err}") from None
        if resolved.tau is None or resolved.tau.mode != "calibrated":
            raise RunnerError(f"decomposition arm {arm!r} of {variant!r}: needs a calibrated tau (arms differ by c)")
        return resolved.tau.c, resolved.eps_den, resolved.eps_mode

    def units(self, units: Sequence[UnitSpec]) -> tuple[UnitSpec, ...]:
        """The arms' units for the decomposition variants among `units` that `units` lack: each arm's
        overrides on top of the variant unit's own (an empty arm is that unit itself); untimed."""
        have = {(u.variant, hparams_key(u.hparams)) for u in units}
        extra = []
        for unit in units:
            if unit.variant not in self.variants or unit.spec is not None:
                continue
            for overrides in self.arms.values():
                arm_unit = UnitSpec(unit.variant, {**unit.hparams, **overrides}, timed=False)
                key = (arm_unit.variant, hparams_key(arm_unit.hparams))
                if key not in have:
                    have.add(key)
                    extra.append(arm_unit)
        return tuple(extra)


def with_arms(units: tuple[UnitSpec, ...], node: DictConfig | dict | None) -> tuple[UnitSpec, ...]:
    """`units` followed by the arms' units of the decomposition config `node` (None: `units`)."""
    return units if node is None else units + Decomposition.from_node(node).units(units)


def arm_labels(frame: pd.DataFrame, decomposition: Decomposition) -> pd.Series:
    """Per row of the aggregated results `frame` (`retrofit.runner.aggregate.COLUMNS`), the arm it
    belongs to (NaN: none): arm A of variant V when V ran with A's settings."""
    arms = pd.DataFrame(
        [(v, arm, *decomposition.settings(v, arm)) for v in decomposition.variants for arm in decomposition.arms],
        columns=["variant", "arm", *SETTINGS],
    )
    keys = frame[["variant", *SETTINGS]].astype({"tau_c": "float64", "eps_den": "float64", "eps_mode": "str"})
    return keys.merge(arms, on=["variant", *SETTINGS], how="left")["arm"].set_axis(frame.index)


def arm_extras(frame: pd.DataFrame, decomposition: Decomposition | None = None) -> pd.Series:
    """Mask of the rows of `frame` that are arm units with overrides (not a variant's own unit): the
    decomposition table shows them, the main table leaves them out."""
    return arm_labels(frame, decomposition or Decomposition.load()).notna() & (frame["hparams"] != "")


def decomposition_frame(frame: pd.DataFrame, decomposition: Decomposition) -> pd.DataFrame:
    """The arm rows of the aggregated results `frame`, with `COLUMNS` (see `arm_labels`)."""
    picked = frame.assign(arm=arm_labels(frame, decomposition)).dropna(subset=["arm"])
    picked = picked.drop_duplicates(["host", "dataset", "seed", "variant", "arm"])
    picked["arm"] = pd.Categorical(picked["arm"], categories=list(decomposition.arms), ordered=True)
    picked["variant"] = pd.Categorical(picked["variant"], categories=list(decomposition.variants), ordered=True)
    return picked.sort_values(["host", "variant", "arm", "dataset", "seed"], ignore_index=True)[COLUMNS]


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per host × variant × arm: cases, mean ΔRMSE % with the main table's 95 % CI, max |ΔRMSE %|, and
    the mean distribution deltas with theirs."""
    rows = []
    for (host, variant, arm), group in frame.groupby(["host", "variant", "arm"], observed=True, sort=True):
        low, high = bootstrap_ci(group)
        rows.append(
            {
                "host": host,
                "variant": variant,
                "arm": arm,
                "tau c": f"{group['tau_c'].iloc[0]:g}",
                "sink": group["eps_mode"].iloc[0],
                "cases": len(group),
                "mean ΔRMSE %": f"{group['delta_rmse_pct'].mean():+.3f}",
                "95% CI": f"[{low:+.3f}, {high:+.3f}]" if len(group) > 1 else "n/a (1 case)",
                "max abs ΔRMSE %": f"{group['delta_rmse_pct'].abs().max():.3f}",
                **{
                    f"mean {label} [95% CI]": mean_with_ci(group, column)
                    for column, label in DISTRIBUTION_DELTAS.items()
                },
            }
        )
    return pd.DataFrame(rows)


def table_markdown(frame: pd.DataFrame) -> str:
    """`summary` as Markdown, with what the arms and deltas mean."""
    cases = frame[["host", "dataset", "seed"]].drop_duplicates()
    return "\n".join(
        [
            "# Retrofit cost: sink and presence effects",
            "",
            "Each arm runs the variant on the same fit as the baseline with the tau constant c and the sink mode "
            "shown: c as in the paper makes presences < 1, a tiny c makes every non-null presence 1 to rounding; "
            "`absolute` is the paper's sink, `relative` a shift-invariant one. Matched deltas against the "
            f"baseline: ΔRMSE %, ΔNLL (nats), ΔCRPS %, Δcoverage of the 90 % interval. {len(cases)} host × "
            f"dataset × seed cases; 95% CI: two-level bootstrap, datasets then seeds within ({N_BOOTSTRAP} draws, "
            "percentile).",
            "",
            summary(frame).to_markdown(index=False, disable_numparse=True),
            "",
        ]
    )


def plot(frame: pd.DataFrame, path: Path) -> Path:
    """Per host, per variant × arm: every case's ΔRMSE % (dots) and the mean with its 95 % CI."""
    from matplotlib.figure import Figure  # no pyplot: no backend switch, no global figure state

    hosts = sorted(frame["host"].unique())
    groups = frame[["variant", "arm"]].drop_duplicates().sort_values(["variant", "arm"])
    labels = [f"{v}\n{a}" for v, a in groups.itertuples(index=False)]
    fig = Figure(figsize=(1.3 * len(labels) * len(hosts) + 2, 4.5))
    axes = fig.subplots(1, len(hosts), squeeze=False)
    jitter = np.random.default_rng(0)
    for ax, host in zip(axes[0], hosts, strict=True):
        for x, (variant, arm) in enumerate(groups.itertuples(index=False)):
            group = frame[(frame["host"] == host) & (frame["variant"] == variant) & (frame["arm"] == arm)]
            if group.empty:
                continue
            deltas = group["delta_rmse_pct"]
            ax.scatter(x + jitter.uniform(-0.15, 0.15, len(deltas)), deltas, s=10, color="tab:blue", alpha=0.6)
            low, high = bootstrap_ci(group)
            mean = deltas.mean()
            yerr = [[mean - low], [high - mean]] if np.isfinite(low) else None
            ax.errorbar(x + 0.3, mean, yerr=yerr, fmt="D", color="black", capsize=4)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_xticks(range(len(labels)), labels, fontsize=8)
        ax.set_title(host)
    axes[0][0].set_ylabel("ΔRMSE vs baseline (%)")
    fig.suptitle("Retrofit cost by arm: presence × sink (black: mean, two-level bootstrap 95% CI)")
    fig.tight_layout()
    write_png(fig, path)
    return path


def write_decomposition(
    frame: pd.DataFrame, results_dir: Path, decomposition: Decomposition | None = None
) -> pd.DataFrame:
    """Write `decomposition.csv` and, when any arm ran, `decomposition.md` and `decomposition.png`
    under `results_dir`, from the aggregated results `frame`; return the arm rows."""
    arms = decomposition_frame(frame, decomposition or Decomposition.load())
    write_csv(arms, Path(results_dir) / "decomposition.csv")
    if len(arms):
        write_text_atomic(Path(results_dir) / "decomposition.md", table_markdown(arms))
        plot(arms, Path(results_dir) / "decomposition.png")
    return arms
