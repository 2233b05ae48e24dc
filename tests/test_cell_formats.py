"""The tables' and plots' presentation rules: one format for every percentage cell (a floor far below
the ΔRMSE columns' precision included), a number's sign a minus in LaTeX, the variants in one order
(`retrofit.unit_key.VARIANT_ORDER`) in every table, plot and the README's headline, the floor column's
yes / no, and a noise floor band that can be seen at the plots' scale."""

import pandas as pd
import pytest
from test_run_files import record

from retrofit.results import run_files as agg
from retrofit.results.figure_tables import headline as readme_headline
from retrofit.results.pages import table_markdown
from retrofit.results.plots import MIN_BAND, draw_band
from retrofit.results.record import frame_of
from retrofit.results.render import latex, percent
from retrofit.results.tables import FLOOR, MAIN, WITHIN, headline, per_dataset, summary
from retrofit.unit_key import VARIANT_ORDER
from retrofit.variants import available_variants


@pytest.mark.parametrize(
    ("value", "signed", "cell"),
    [
        (-0.529, True, "-0.529"),
        (0.0006, True, "+0.001"),
        (1.5, False, "1.500"),
        (6.3e-05, False, "6.3×10⁻⁵"),
        (0.00011, False, "1.1×10⁻⁴"),
        (-4.6e-06, True, "-4.6×10⁻⁶"),
        (0.0004999, True, "+5.0×10⁻⁴"),
        (0.0, True, "+0.000"),
        (-0.0, True, "+0.000"),
    ],
)
def test_a_percentage_is_fixed_to_three_decimals_or_a_power_of_ten_where_those_show_nothing(value, signed, cell):
    assert percent(value, signed=signed) == cell


def test_latex_sets_a_numbers_minus_and_its_power_of_ten_in_math_mode_and_leaves_hyphens():
    cells = pd.DataFrame({"host": ["two-level"], "mean": ["-0.529"], "CI": ["[-1.3×10⁻⁵, +8.0×10⁻⁶]"], "c": ["1e-06"]})
    row = latex(cells, "n − 1", "tab:x").split(r"\midrule")[1].splitlines()[1]
    assert row == (
        r"two-level & \ensuremath{-}0.529 & [\ensuremath{-}1.3\ensuremath{\times 10^{-5}}, "
        r"+8.0\ensuremath{\times 10^{-6}}] & 1e-06 \\"
    )
    assert r"\caption{n \ensuremath{-} 1}" in latex(cells, "n − 1", "tab:x")


def test_the_floor_column_says_yes_exactly_where_the_mean_lies_within_the_floor():
    frame = frame_of([record("a", "oa_only", 2e-5), record("a", "full_o", 0.5), record("b", "full_o", 0.3)])
    cells = summary(frame, floors={"h": 6.3e-5}).set_index("variant")
    assert cells.loc["oa_only", MAIN] == "+2.0×10⁻⁵" and cells.loc["oa_only", WITHIN] == "yes"
    assert cells.loc["full_o", MAIN] == "+0.400" and cells.loc["full_o", WITHIN] == "no"
    assert set(cells[FLOOR]) == {"6.3×10⁻⁵"}
    assert set(summary(frame, floors={}).set_index("variant")[FLOOR]) == {"not measured"}


def test_the_order_of_the_variants_is_the_built_in_files():
    assert sorted(VARIANT_ORDER) == available_variants() and VARIANT_ORDER[0] == "baseline"


def mixed_frame() -> pd.DataFrame:
    """Every built-in variant and one of one's own on two datasets, listed in name order (as `frame_of` sorts)."""
    names = ["baseline", "full_o", "mine", "o_closed", "oa_only"]
    return frame_of([record(d, v, 0.1 * i) for d in ("a", "b") for i, v in enumerate(names)])


def test_every_table_and_the_console_headline_list_the_variants_in_one_order():
    frame, shown = mixed_frame(), ["oa_only", "full_o", "o_closed", "mine"]
    assert list(summary(frame[frame["variant"] != "baseline"])["variant"]) == shown
    assert list(per_dataset(frame).columns[-4:]) == shown
    rows = [line.split("|")[1].strip() for line in headline(frame).splitlines()[2:]]
    assert rows == shown


def test_the_readme_headline_lists_the_variants_in_the_tables_order(tmp_path):
    frame = mixed_frame()
    (tmp_path / "retrofit_table.md").write_text(table_markdown(frame[frame["variant"] != "baseline"]))
    (tmp_path / "decomposition.md").write_text("| host | variant | arm |\n|---|---|---|\n| h | oa_only | paper |\n")
    rows = [line.split("|")[1].strip() for line in readme_headline(tmp_path).splitlines()[2:]]
    assert [row.split(" ")[0].strip("`,") for row in rows[:4]] == ["oa_only", "full_o", "o_closed", "mine"]


def test_both_plots_list_the_variants_in_the_tables_order_and_shade_the_floor(tmp_path, monkeypatch):
    drawn = {}

    def seen(frame, groups, panels, title, path, facets=("host",), bands=None):
        drawn[path.name] = (list(dict.fromkeys(frame["label"])), [p[0] for p in panels], bands)

    monkeypatch.setattr(agg, "dots_with_ci", seen)
    agg.plot_main(mixed_frame(), tmp_path, {("h", "cpu"): 6.3e-5})
    for name in (agg.DELTAS, agg.DISTRIBUTION):
        labels, columns, bands = drawn[name]
        assert labels == ["oa_only", "full_o", "o_closed", "mine"] and columns[0] == "delta_rmse_pct"
        assert bands == {("h", "delta_rmse_pct"): 6.3e-5}
    assert drawn[agg.DISTRIBUTION][1][1:] == ["delta_nll", "delta_crps_pct", "delta_coverage_90"]


@pytest.mark.parametrize(("half", "widened"), [(6.3e-5, True), (1.5, False)])
def test_a_floor_band_is_drawn_at_least_a_visible_share_of_its_panel(half, widened):
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    ax.set_ylim(-4.0, 2.0)
    said = draw_band(ax, half, percent(half, signed=False))
    (patch,) = ax.patches  # a Rectangle in data units along y
    low, high = patch.get_y(), patch.get_y() + patch.get_height()
    assert high == pytest.approx(-low) and high == pytest.approx(max(half, MIN_BAND * 6.0))
    assert said == f"grey: ± noise floor {percent(half, signed=False)}" + (
        " (drawn wider, to be seen)" if widened else ""
    )
    assert patch.get_label() == "± noise floor" and bool(patch.get_hatch()) == widened
