"""The tables of measured figures of the benchmarks' results files (closure, hosts, operators,
removal, the sweep's cost) that docs/*.md show, one function per generated region
(`retrofit.results.generated_docs.REGIONS`), with the fixed formats of `retrofit.results.figure_tables`."""

from pathlib import Path

import pandas as pd

from retrofit.results.figure_tables import markdown, ordered, ratio

# -- closure (`make audit`, `make padding-demo`, `make bench-batch`) ----------------------------------


def audit(results: Path) -> str:
    """`audit.csv`: per variant and insertion (where, rows or columns), the largest relative change of
    the predictions (`linf_pred / max_abs_pred`) over k and blocks, one figure per host separated by `/`."""
    frame = pd.read_csv(results / "audit.csv")
    frame["rel"] = frame.linf_pred / frame.max_abs_pred
    hosts = ordered(frame.host)
    places = ordered(frame.inserted_at + " " + frame.null_kind)
    worst = frame.groupby(["variant", "inserted_at", "null_kind", "host"], sort=False).agg(
        rel=("rel", "max"), status=("status", "first")
    )

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
    """`host_quality.csv`: per dataset, each host's RMSE over the mean predictor's, ridge's, the
    random forest's and gradient boosting's (per seed, then the mean over seeds), and the forest's
    and gradient boosting's over ridge's."""
    frame = pd.read_csv(results / "host_quality.csv").pivot_table(
        index=["dataset", "seed"], columns="model", values="rmse"
    )
    hosts = [m for m in frame.columns if "[" in m]
    baselines = ("mean", "ridge", "random_forest", "gradient_boosting")
    pairs = [(h, b) for h in hosts for b in baselines] + [("random_forest", "ridge"), ("gradient_boosting", "ridge")]

    def short(model: str) -> str:
        return {"random_forest": "RF", "gradient_boosting": "GB"}.get(model, model.split("[")[0])

    ratios = pd.DataFrame({f"{short(a)} / {short(b)}": frame[a] / frame[b] for a, b in pairs}).groupby("dataset").mean()
    return markdown(["dataset", *ratios.columns], [[d, *(f"{v:.3f}" for v in r)] for d, r in ratios.iterrows()])


def quality_summary(path: Path) -> str:
    frame = pd.read_csv(path)
    rows = [
        [
            f"`{r.model}`",
            f"{r.worst_rmse_over_mean:.3f} ({r.worst_dataset})",
            f"{r.geomean_rmse_over_ridge:.3f}",
            f"{r.geomean_rmse_over_rf:.3f}",
            "met" if r.meets_bar else "missed",
        ]
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
    return markdown(
        ["model \\ k", *(f"{k:g}" for k in table.columns)],
        [[f"`{m}`", *(f"{v:.2f}" for v in r)] for m, r in table.iterrows()],
    )


def noise_floor(results: Path) -> str:
    """`noise_floor.csv` as it is: per host, device and source, the movements' count, median and largest."""
    frame = pd.read_csv(results / "noise_floor.csv")
    rows = [
        [f"`{r.host}`", r.device, f"`{r.source}`", r.cases, f"{r.median_rel_pct:.1e}", f"{r.max_rel_pct:.1e}"]
        for r in frame.itertuples()
    ]
    return markdown(["host", "device", "source", "cases", "median (%)", "max (%)"], rows)


def scale(results: Path) -> str:
    """`scale.csv`: per architecture, variant and table (with its device), time ratio (range),
    operations ratio, peak and clone memory, audit, load; the memory-saving row its memory ratio and
    its difference from the unchunked prediction."""
    rows = []
    for r in pd.read_csv(results / "scale.csv").itertuples():
        label = [f"`{r.arch}`", r.variant, r.device]
        if r.status != "measured":
            rows.append([*label, "", r.status, *[""] * 6])
            continue
        table = "" if pd.isna(r.n_train) else f"{r.n_train:.0f} × {r.n_test:.0f} × {r.n_features:.0f}"
        load = f"{r.load_start:.1f}–{r.load_end:.1f}"
        if r.variant == "predict_many":
            time = ratio(r.time_ratio, r.time_ratio_min, r.time_ratio_max)
            batched = f"{time}, {r.batched_tables:.0f} tables batched, max rel. diff {r.max_rel_diff:.1e}"
            rows.append([*label, table, batched, "", "", "", "", "", load])
        elif r.variant == "o_closed_memory_saving":
            memory = f"{r.memory_ratio:.3f} (chunked; rel. diff {r.max_rel_diff:.1e})"
            rows.append([*label, table, "", "", memory, "", "", "", load])
        else:
            figures = [
                ratio(r.time_ratio, r.time_ratio_min, r.time_ratio_max),
                "" if pd.isna(r.ops_ratio) else f"{r.ops_ratio:.3f}",
                f"{r.memory_ratio:.3f}",
                f"{r.clone_memory_ratio:.3f}",
                "" if pd.isna(r.audit_rows_rel) else f"{r.audit_rows_rel:.1e}",
                "" if pd.isna(r.audit_columns_rel) else f"{r.audit_columns_rel:.1e}",
            ]
            rows.append([*label, table, *figures, load])
    header = [
        "architecture",
        "variant",
        "device",
        "train × test × features",
        "time ratio, median (min–max)",
        "operations ratio",
        "peak memory ratio",
        "clone memory / weights",
        "audit rows",
        "audit columns",
        "load (start–end)",
    ]
    return markdown(header, rows)


# -- operators (`make exactness`, `make ablation`) --------------------------------------------------


def exactness(results: Path) -> str:
    """`exactness.csv`: per dtype, implementation and score std, the worst over shapes and sink modes."""
    frame = pd.read_csv(results / "exactness.csv")
    worst = frame.groupby(["dtype", "implementation", "score_std"], sort=False)[
        ["linf_abs", "linf_eps_units", "null_receiver_max_abs", "null_insertion_eps_units"]
    ].max()
    rows = [[d, f"`{i}`", f"{s:g}", *(f"{v:.2g}" for v in values)] for (d, i, s), values in worst.iterrows()]
    return markdown(
        [
            "dtype",
            "implementation",
            "score std",
            "L∞ abs",
            "L∞ in eps·max\\|ref\\|",
            "null receivers",
            "null insertion, eps",
        ],
        rows,
    )


def ablation(results: Path) -> str:
    """`ablation.csv`: the old tokens' L∞ change per host, block and number of inserted null tokens."""
    frame = pd.read_csv(results / "ablation.csv")
    table = frame.pivot_table(index="host", columns=["n_null", "block"], values="linf_old_tokens", sort=False)
    header = ["host", *(f"block {b}, n_null={n}" for n, b in table.columns)]
    return markdown(header, [[h, *(f"{v:.3g}" for v in r)] for h, r in table.iterrows()])


# -- removal (`make explain-bench`, `make explain-scale`) -------------------------------------------


def agreement(row: pd.Series) -> str:
    """A removal benchmark row's rank correlation and largest difference against the refit: `ρ, max diff`."""
    return f"{row.rank_corr_median:.2f}, {row.max_abs_diff_vs_refit:.3g}"


def removal_bench(results: Path) -> str:
    """`removal_bench.csv`: per host and dataset, the refit's CPU seconds per row, ours' speed-up for one
    row (range) and 32 rows, rank correlation and largest difference against the refit per index, and
    the stock host with zeroed cells."""
    frame = pd.read_csv(results / "removal_bench.csv").set_index(["host", "dataset", "index", "method"])
    rows = []
    for host, dataset in ordered(zip(frame.index.get_level_values(0), frame.index.get_level_values(1), strict=True)):

        def at(index: str, method: str, host: str = host, dataset: str = dataset) -> pd.Series:
            return frame.loc[(host, dataset, index, method)]

        ours, rows32 = at("SV", "closed_batched"), at("SV", "closed_batched_rows")

        loo = at("LOO", "closed_batched")
        rows.append(
            [
                host,
                dataset,
                int(ours.n_features),
                f"{int(ours.n_coalitions):,}",
                f"{at('SV', 'refit_shapiq').seconds:.3g}",
                ratio(ours.speedup_vs_refit, ours.speedup_min, ours.speedup_max),
                f"{rows32.speedup_vs_refit:.0f}×",
                agreement(ours),
                agreement(at("k-SII", "closed_batched")),
                agreement(at("SV", "stock_zeroed")),
                f"{loo.speedup_vs_refit:.2f}×, {loo.rank_corr_median:.2f}",
            ]
        )
    header = [
        "host",
        "dataset",
        "d",
        "coalitions",
        "refit CPU-s / row",
        "ours, 1 row: speed-up (min–max)",
        "ours, 32 rows",
        "SV: ρ, max diff",
        "k-SII: ρ, max diff",
        "zeroed SV: ρ, max diff",
        "LOO: speed-up, ρ",
    ]
    return markdown(header, rows)


def removal_stages(results: Path) -> str:
    """`removal_stages.csv`: CPU milliseconds per coalition, per host, dataset, method and stage."""
    frame = pd.read_csv(results / "removal_stages.csv")
    table = frame.pivot_table(
        index=["host", "dataset", "method"], columns="stage", values="ms_per_coalition", sort=False
    )
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
        rows.append(
            [
                f"`{arch}`",
                *diffs,
                f"{at.loc['SV'].efficiency_rel:.0e}",
                speedup,
                f"{loo.speedup:.2f}×, {loo.rank_corr:.2f}",
            ]
        )
    header = [
        "arch",
        "values vs refits",
        "SV",
        "k-SII",
        "invariance",
        "Σφ − (v(all) − v(∅))",
        "speed-up, 1 row (min–max)",
        "LOO: speed-up, ρ",
    ]
    return markdown(header, rows)


# -- the sweep's cost (`make sweep-cost`) -----------------------------------------------------------


def sweep_cost(results: Path) -> str:
    """`sweep_cost.csv`: CPU seconds per case and phase (shared stages on / off), and the import once
    per process."""
    frame = pd.read_csv(results / "sweep_cost.csv")
    cases = frame[frame.phase != "import"]
    table = cases.pivot_table(
        index=["host", "dataset", "seed", "shared_stages"], columns="phase", values="cpu_s", sort=False
    )
    rows = [
        [h, d, f"{s:.0f}", "on" if shared else "off", *(f"{v:.1f}" for v in r)]
        for (h, d, s, shared), r in table.iterrows()
    ]
    imports = frame[frame.phase == "import"].cpu_s
    return markdown(["host", "dataset", "seed", "shared stages", *(f"{p} (CPU s)" for p in table.columns)], rows) + (
        f"\nImport, once per process: {imports.median():.1f} CPU s (median of {len(imports)}).\n"
    )
