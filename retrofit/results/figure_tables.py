"""The Markdown tables of measured figures that README.md and docs/*.md show, one function per
generated region (`REGIONS`), each reading the committed results files under a `results` folder.

Every function renders with fixed formats (no locale, no clock, rows in the file's or a sorted
order), so the same results files give the same text byte for byte; `retrofit.results.generated_docs`
writes them into the documents' marked regions.
"""

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

Rows = list[dict[str, str]]


def markdown(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table of `rows` under `header`, one line each, ending in a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def record_table(path: Path, column: str) -> Rows:
    """The rows (column -> stripped cell) of the first Markdown table of `path` whose header has `column`."""
    lines = path.read_text().splitlines()
    cells = lambda line: [cell.strip() for cell in line.strip().strip("|").split("|")]  # noqa: E731
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and column in cells(line))
    header = cells(lines[start])
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, cells(line), strict=True)))
    return rows


def ratio(median: float, low: float, high: float) -> str:
    """A median ratio with its per-round range: `1.05× (0.98–1.12)`."""
    return f"{median:.2f}× ({low:.2f}–{high:.2f})"


def ordered(values: pd.Series) -> list:
    """`values`' distinct entries in the order they first appear."""
    return list(dict.fromkeys(values))


# -- the sweep (`make retrofit`) -------------------------------------------------------------------

MAIN = "mean ΔRMSE %"


def summary_cell(row: dict[str, str] | None) -> str:
    """mean [CI] (largest) of a record row; `refused` where the record has no row (not run)."""
    return "refused" if row is None else f"{row[MAIN]} {row['95% CI']} ({row['largest ΔRMSE %']})"


def headline(results: Path) -> str:
    """README's headline: per variant and host, mean ΔRMSE % [CI] (largest case) from
    `retrofit_table.md`, and the `oa_only` rows of the relative-sink and presences -> 1 arms from
    `decomposition.md`."""
    record = {(r["host"], r["variant"]): r for r in record_table(results / "retrofit_table.md", MAIN)}
    arms = {(r["host"], r["variant"], r["arm"]): r for r in record_table(results / "decomposition.md", "arm")}
    hosts = ordered(pd.Series([host for host, _ in record]))
    rows = [
        [label, *(summary_cell(record.get((host, variant))) for host in hosts)]
        for variant, label in (
            ("oa_only", "`oa_only` (OAttention, paper's sink)"),
            ("full_o", "`full_o` (+ OFFN, ONorm)"),
            ("o_closed", "`o_closed` (whole host closed)"),
        )
    ]
    rows += [
        [label, *(summary_cell(arms.get((host, "oa_only", arm))) for host in hosts)]
        for arm, label in (
            ("presence_only", "`oa_only`, relative sink (seed 0)"),
            ("sink_only", "`oa_only`, presences → 1, paper's sink (seed 0)"),
        )
    ]
    return markdown(["variant", *(f"`{host}` mean ΔRMSE % [CI] (largest)" for host in hosts)], rows)


def retrofit_main(results: Path) -> str:
    """The record's main table without its baseline rows and times: host, variant, mean ΔRMSE %, CI,
    cases above / below zero, the largest case (signed)."""
    columns = ["host", "variant", MAIN, "95% CI", "cases > 0 / < 0", "largest ΔRMSE %"]
    rows = [
        [f"`{r['host']}`", f"`{r['variant']}`", *(r[c] for c in columns[2:])]
        for r in record_table(results / "retrofit_table.md", MAIN)
        if r["variant"] != "baseline"
    ]
    return markdown(columns, rows)


def retrofit_per_dataset(results: Path) -> str:
    """The record's per-dataset table (mean over seeds, ΔRMSE %), its baseline column left out."""
    table = record_table(results / "retrofit_table.md", "baseline RMSE")
    variants = [c for c in table[0] if c not in ("host", "dataset", "baseline RMSE", "seeds", "baseline")]
    columns = ["host", "dataset", "baseline RMSE", *variants]
    return markdown(columns, [[r[c] for c in columns] for r in table])


def decomposition(results: Path) -> str:
    """The `oa_only` arms of `decomposition.md`: arm, tau's c, sink, and per host mean [CI] (largest)."""
    table = [r for r in record_table(results / "decomposition.md", "arm") if r["variant"] == "oa_only"]
    hosts = ordered(pd.Series([r["host"] for r in table]))
    cells = {(r["host"], r["arm"]): r for r in table}
    rows = [
        [f"`{arm}`", cells[(hosts[0], arm)]["tau c"], cells[(hosts[0], arm)]["sink"]]
        + [summary_cell(cells.get((host, arm))) for host in hosts]
        for arm in ordered(pd.Series([r["arm"] for r in table]))
    ]
    return markdown(["arm", "tau c", "sink", *(f"`{host}`" for host in hosts)], rows)


def tau_sweep(results: Path) -> str:
    """`tau_sweep.csv`: per host, variant and c, mean ΔRMSE % [CI] and the largest |ΔRMSE| %."""
    frame = pd.read_csv(results / "tau_sweep.csv")
    rows = [
        [f"`{r.host}`", f"`{r.variant}`", f"{r.c:g}", f"{r.mean_delta_rmse_pct:+.2g}", f"[{r.ci_low:+.2g}, {r.ci_high:+.2g}]", f"{r.max_abs_delta_rmse_pct:.2g}"]
        for r in frame.itertuples()
    ]
    return markdown(["host", "variant", "c", MAIN, "95% CI", "max abs ΔRMSE %"], rows)


# -- closure (`make audit`, `make padding-demo`, `make bench-batch`) ----------------------------------


def audit(results: Path) -> str:
    """`audit.csv`: per variant and insertion (where, rows or columns), the largest relative change of
    the predictions (`linf_pred / max_abs_pred`) over k and blocks, one figure per host separated by `/`."""
    frame = pd.read_csv(results / "audit.csv")
    frame["rel"] = frame.linf_pred / frame.max_abs_pred
    hosts = ordered(frame.host)
    places = ordered(frame.inserted_at + " " + frame.null_kind)
    worst = frame.groupby(["variant", "inserted_at", "null_kind", "host"], sort=False).agg(rel=("rel", "max"), status=("status", "first"))

    def cell(variant: str, place: str) -> str:
        where, kind = place.split()
        figures = []
        for host in hosts:
            key = (variant, where, kind, host)
            if key not in worst.index:
                figures.append("—")
            else:
                figures.append("refused" if worst.loc[key, "status"] == "refused" else f"{worst.loc[key, 'rel']:.1e}")
        return " / ".join(figures)

    rows = [[f"`{variant}`", *(cell(variant, place) for place in places)] for variant in ordered(frame.variant)]
    return f"Hosts, in each cell: {' / '.join(f'`{h}`' for h in hosts)}.\n\n" + markdown(
        ["variant", *(f"`{place.split()[0]}` {place.split()[1]}" for place in places)], rows
    )


def padding_demo(results: Path) -> str:
    """`padding_demo.csv`: per host, variant and dataset, the largest relative prediction change over seeds."""
    frame = pd.read_csv(results / "padding_demo.csv")
    worst = frame.groupby(["host", "variant", "dataset"], sort=False).rel_delta_pred.max()
    return markdown(
        ["host", "variant", "dataset", "largest change / largest prediction"],
        [[f"`{h}`", f"`{v}`", d, f"{value:.1e}"] for (h, v, d), value in worst.items()],
    )


def bench_batch(results: Path) -> str:
    """`bench_batch.csv`: per host, the median speed-up of `predict_many` over sequential predicts, its
    range over rounds, and the share of the time outside preprocessing."""
    frame = pd.read_csv(results / "bench_batch.csv")
    rows = []
    for host, runs in frame.groupby("host", sort=False):
        forward = 1 - runs.preprocess_seconds.sum() / runs.predict_many_seconds.sum()
        speedup = ratio(runs.speedup.median(), runs.speedup.min(), runs.speedup.max())
        rows.append([f"`{host}`", len(runs), int(runs.n_tables.iloc[0]), speedup, f"{100 * forward:.0f} %"])
    return markdown(["host", "rounds", "tables", "speed-up, median (min–max)", "predict_many time in forwards"], rows)


# -- hosts (`make host-quality`, `make preset-selection`, `make noise-floor`, `make scale-check`) -----


def host_quality(results: Path) -> str:
    """`host_quality.csv`: per dataset, each host's RMSE over the mean predictor's, ridge's and the
    random forest's (per seed, then the mean over seeds), and the forest's over ridge's."""
    frame = pd.read_csv(results / "host_quality.csv").pivot_table(index=["dataset", "seed"], columns="model", values="rmse")
    hosts = [m for m in frame.columns if "[" in m]
    pairs = [(h, b) for h in hosts for b in ("mean", "ridge", "random_forest")] + [("random_forest", "ridge")]
    short = lambda model: {"random_forest": "RF"}.get(model, model.split("[")[0])  # noqa: E731
    ratios = pd.DataFrame({f"{short(a)} / {short(b)}": frame[a] / frame[b] for a, b in pairs}).groupby("dataset").mean()
    return markdown(["dataset", *ratios.columns], [[d, *(f"{v:.3f}" for v in r)] for d, r in ratios.iterrows()])


def quality_summary(path: Path) -> str:
    frame = pd.read_csv(path)
    rows = [
        [f"`{r.model}`", f"{r.worst_rmse_over_mean:.3f} ({r.worst_dataset})", f"{r.geomean_rmse_over_ridge:.3f}", f"{r.geomean_rmse_over_rf:.3f}", "met" if r.meets_bar else "missed"]
        for r in frame.itertuples()
    ]
    return markdown(["model", "worst RMSE / mean (dataset)", "geomean RMSE / ridge", "geomean RMSE / RF", "bar"], rows)


def host_quality_summary(results: Path) -> str:
    """`host_quality_summary.csv`, one row per model."""
    return quality_summary(results / "host_quality_summary.csv")


def preset_selection(results: Path) -> str:
    """`preset_selection/host_quality_summary.csv`, one row per host [preset] and baseline."""
    return quality_summary(results / "preset_selection" / "host_quality_summary.csv")


def extrapolation(results: Path) -> str:
    """`host_extrapolation.csv`: each host's prediction at x = k training sd, in training-y sd."""
    frame = pd.read_csv(results / "host_extrapolation.csv")
    table = frame.pivot_table(index="model", columns="x_z", values="pred_y_z", sort=False)
    return markdown(["model \\ k", *(f"{k:g}" for k in table.columns)], [[f"`{m}`", *(f"{v:.2f}" for v in r)] for m, r in table.iterrows()])


def noise_floor(results: Path) -> str:
    """`noise_floor.csv` as it is: per host, device and source, the movements' count, median and largest."""
    frame = pd.read_csv(results / "noise_floor.csv")
    rows = [[f"`{r.host}`", r.device, f"`{r.source}`", r.cases, f"{r.median_rel_pct:.1e}", f"{r.max_rel_pct:.1e}"] for r in frame.itertuples()]
    return markdown(["host", "device", "source", "cases", "median (%)", "max (%)"], rows)


def scale(results: Path) -> str:
    """`scale.csv`: per architecture and variant, time ratio (range), peak and clone memory, audit, load."""
    rows = []
    for r in pd.read_csv(results / "scale.csv").itertuples():
        if r.status != "measured":
            rows.append([f"`{r.arch}`", r.variant, r.status, "", "", "", "", ""])
            continue
        time = ratio(r.time_ratio, r.time_ratio_min, r.time_ratio_max)
        load = f"{r.load_start:.1f}–{r.load_end:.1f}"
        if r.variant == "predict_many":
            batched = f"{time}, {r.batched_tables:.0f} tables batched, max rel. diff {r.max_rel_diff:.1e}"
            rows.append([f"`{r.arch}`", r.variant, batched, "", "", "", "", load])
        else:
            figures = [f"{r.memory_ratio:.3f}", f"{r.clone_memory_ratio:.3f}", f"{r.audit_rows_rel:.1e}", f"{r.audit_columns_rel:.1e}"]
            rows.append([f"`{r.arch}`", r.variant, time, *figures, load])
    header = ["architecture", "variant", "time ratio, median (min–max)", "peak memory ratio", "clone memory / weights", "audit rows", "audit columns", "load (start–end)"]
    return markdown(header, rows)


# -- operators (`make exactness`, `make ablation`) --------------------------------------------------


def exactness(results: Path) -> str:
    """`exactness.csv`: per dtype, implementation and score std, the worst over shapes and sink modes."""
    frame = pd.read_csv(results / "exactness.csv")
    worst = frame.groupby(["dtype", "implementation", "score_std"], sort=False)[["linf_abs", "linf_eps_units", "null_receiver_max_abs", "null_insertion_eps_units"]].max()
    rows = [[d, f"`{i}`", f"{s:g}", *(f"{v:.2g}" for v in values)] for (d, i, s), values in worst.iterrows()]
    return markdown(["dtype", "implementation", "score std", "L∞ abs", "L∞ in eps·max\\|ref\\|", "null receivers", "null insertion, eps"], rows)


def ablation(results: Path) -> str:
    """`ablation.csv`: the old tokens' L∞ change per host, block and number of inserted null tokens."""
    frame = pd.read_csv(results / "ablation.csv")
    table = frame.pivot_table(index="host", columns=["n_null", "block"], values="linf_old_tokens", sort=False)
    header = ["host", *(f"block {b}, n_null={n}" for n, b in table.columns)]
    return markdown(header, [[h, *(f"{v:.3g}" for v in r)] for h, r in table.iterrows()])


# -- removal (`make explain-bench`, `make explain-scale`) -------------------------------------------


def removal_bench(results: Path) -> str:
    """`removal_bench.csv`: per host and dataset, the refit's CPU seconds per row, ours' speed-up for one
    row (range) and 32 rows, rank correlation and largest difference against the refit per index, and
    the stock host with zeroed cells."""
    frame = pd.read_csv(results / "removal_bench.csv").set_index(["host", "dataset", "index", "method"])
    rows = []
    for host, dataset in ordered(zip(frame.index.get_level_values(0), frame.index.get_level_values(1), strict=True)):
        at = lambda index, method: frame.loc[(host, dataset, index, method)]  # noqa: E731
        ours, rows32 = at("SV", "closed_batched"), at("SV", "closed_batched_rows")
        agree = lambda r: f"{r.rank_corr_median:.2f}, {r.max_abs_diff_vs_refit:.3g}"  # noqa: E731
        loo = at("LOO", "closed_batched")
        rows.append(
            [host, dataset, int(ours.n_features), f"{int(ours.n_coalitions):,}", f"{at('SV', 'refit_shapiq').seconds:.3g}", ratio(ours.speedup_vs_refit, ours.speedup_min, ours.speedup_max)]
            + [f"{rows32.speedup_vs_refit:.0f}×", agree(ours), agree(at("k-SII", "closed_batched")), agree(at("SV", "stock_zeroed")), f"{loo.speedup_vs_refit:.2f}×, {loo.rank_corr_median:.2f}"]
        )
    header = ["host", "dataset", "d", "coalitions", "refit CPU-s / row", "ours, 1 row: speed-up (min–max)", "ours, 32 rows", "SV: ρ, max diff", "k-SII: ρ, max diff", "zeroed SV: ρ, max diff", "LOO: speed-up, ρ"]
    return markdown(header, rows)


def removal_stages(results: Path) -> str:
    """`removal_stages.csv`: CPU milliseconds per coalition, per host, dataset, method and stage."""
    frame = pd.read_csv(results / "removal_stages.csv")
    table = frame.pivot_table(index=["host", "dataset", "method"], columns="stage", values="ms_per_coalition", sort=False)
    rows = [[h, d, f"`{m}`", *("" if pd.isna(v) else f"{v:.3g}" for v in r)] for (h, d, m), r in table.iterrows()]
    return markdown(["host", "dataset", "method", *table.columns], rows)


def removal_scale(results: Path) -> str:
    """`removal_scale.csv`: per architecture, the largest difference from the refits per quantity
    (relative to the prediction scale), the efficiency gap, one row's speed-up and leave-one-out's."""
    frame = pd.read_csv(results / "removal_scale.csv").set_index(["arch", "quantity"])
    rows = []
    for arch in ordered(frame.index.get_level_values(0)):
        at = frame.loc[arch]
        if (at.status != "measured").any():
            rows.append([f"`{arch}`", *(["refused"] * 7)])
            continue
        values, loo = at.loc["values"], at.loc["LOO"]
        diffs = [f"{at.loc[q].max_rel_diff:.1e}" for q in ("values", "SV", "k-SII", "invariance")]
        speedup = ratio(values.speedup, values.speedup_min, values.speedup_max)
        rows.append([f"`{arch}`", *diffs, f"{at.loc['SV'].efficiency_rel:.0e}", speedup, f"{loo.speedup:.2f}×, {loo.rank_corr:.2f}"])
    header = ["arch", "values vs refits", "SV", "k-SII", "invariance", "Σφ − (v(all) − v(∅))", "speed-up, 1 row (min–max)", "LOO: speed-up, ρ"]
    return markdown(header, rows)


# -- the sweep's cost (`make sweep-cost`) -----------------------------------------------------------


def sweep_cost(results: Path) -> str:
    """`sweep_cost.csv`: CPU seconds per case and phase (shared stages on / off), and the import once
    per process."""
    frame = pd.read_csv(results / "sweep_cost.csv")
    cases = frame[frame.phase != "import"]
    table = cases.pivot_table(index=["host", "dataset", "seed", "shared_stages"], columns="phase", values="cpu_s", sort=False)
    rows = [[h, d, f"{s:.0f}", "on" if shared else "off", *(f"{v:.1f}" for v in r)] for (h, d, s, shared), r in table.iterrows()]
    imports = frame[frame.phase == "import"].cpu_s
    return markdown(["host", "dataset", "seed", "shared stages", *(f"{p} (CPU s)" for p in table.columns)], rows) + (
        f"\nImport, once per process: {imports.median():.1f} CPU s (median of {len(imports)}).\n"
    )


REGIONS: dict[str, Callable[[Path], str]] = {
    "headline": headline,
    "retrofit-main": retrofit_main,
    "retrofit-per-dataset": retrofit_per_dataset,
    "decomposition": decomposition,
    "tau-sweep": tau_sweep,
    "audit": audit,
    "padding-demo": padding_demo,
    "bench-batch": bench_batch,
    "host-quality": host_quality,
    "host-quality-summary": host_quality_summary,
    "preset-selection": preset_selection,
    "extrapolation": extrapolation,
    "noise-floor": noise_floor,
    "scale": scale,
    "exactness": exactness,
    "ablation": ablation,
    "removal-bench": removal_bench,
    "removal-stages": removal_stages,
    "removal-scale": removal_scale,
    "sweep-cost": sweep_cost,
}
"""Region name -> the function that renders it from a `results` folder."""
