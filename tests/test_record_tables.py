"""The record's tables are what its committed CSVs give (`make tables`), fit a page and carry the
CSVs' numbers: the main table's mean and noise floor, the per-dataset spread over the seeds, the
LaTeX twins' booktabs rules and rows, one name per decomposition arm."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from refusals import one_line

from retrofit.errors import RunnerError
from retrofit.results.figure_tables import record_table
from retrofit.results.record import frame_of, read_records
from retrofit.results.run_files import ARMS_CSV, CSV, read_arms, table_texts
from retrofit.results.tables import FLOOR, MAIN, WITHIN
from retrofit.runner.finish import noise_floors

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
FOLDERS = [RESULTS, RESULTS / "suite"]
"""The record's sweeps: `make tables` renders both."""


def main_rows() -> pd.DataFrame:
    frame = pd.read_csv(RESULTS / CSV, keep_default_na=False, na_values=[""])
    return frame[~frame["arm_extra"]]


def table_lines(path: Path) -> list[list[str]]:
    """The cells of every Markdown table row of `path` (separator rows left out)."""
    rows = [line for line in path.read_text().splitlines() if line.startswith("|")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows if not set(row) <= set("|:- ")]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_the_committed_tables_are_what_make_tables_renders_from_the_committed_csvs(folder):
    frame = frame_of(read_records(folder / CSV))
    texts = table_texts(frame, read_arms(folder / ARMS_CSV), noise_floors(RESULTS / "noise_floor.csv"))
    assert {"retrofit_table.md", "retrofit_table.tex", "retrofit_per_dataset.tex"} <= set(texts)
    for name, text in texts.items():
        assert (folder / name).read_text() == text, f"{folder / name} is stale: make tables"


def test_the_main_tables_mean_and_floor_are_the_csvs():
    rows = {(r["host"], r["variant"]): r for r in record_table(RESULTS / "retrofit_table.md", MAIN)}
    cases = main_rows().query("host == 'tiny_v2' and variant == 'oa_only'")["delta_rmse_pct"]
    floors = pd.read_csv(RESULTS / "noise_floor.csv").query("host == 'tiny_v2' and source != 'precision'")
    floor = floors["max_rel_pct"].max()  # the largest movement over the float32 run's sources
    row = rows[("tiny_v2", "oa_only")]
    assert len(cases) == 18 and row["cases"] == "18"
    assert row[MAIN] == f"{cases.mean():+.3f}" and abs(float(row[MAIN]) - cases.mean()) < 5e-4
    assert row[FLOOR] == "6.3×10⁻⁵" and abs(floor - 6.3e-5) < 5e-7  # the floor in the ΔRMSE columns' format
    assert row[WITHIN] == "no" and abs(cases.mean()) > floor
    assert ("tiny_v2", "baseline") not in rows  # 0 by definition, left out


def test_the_arms_within_their_hosts_floor_read_yes_and_the_others_no():
    """The decomposition's identity check gives the stock host back to rounding: its mean lies within the
    floor (`yes`), the paper arm's of tiny_v2 far outside it (`no`), as the CSVs' numbers say."""
    rows = {(r["host"], r["variant"], r["arm"]): r for r in record_table(RESULTS / "decomposition.md", "arm")}
    arms = pd.read_csv(RESULTS / ARMS_CSV).groupby(["host", "variant", "arm"])["delta_rmse_pct"].mean()
    floors = (
        pd.read_csv(RESULTS / "noise_floor.csv").query("source != 'precision'").groupby("host")["max_rel_pct"].max()
    )
    for key, mean in arms.items():
        assert rows[key][WITHIN] == ("yes" if abs(mean) < floors[key[0]] else "no"), key
    assert rows[("tiny_v2", "oa_only", "identity_check")][WITHIN] == "yes"
    assert rows[("tiny_v2", "oa_only", "paper")][WITHIN] == "no"


def test_the_per_dataset_spread_is_the_seeds_mean_and_sd():
    rows = {(r["host"], r["dataset"]): r for r in record_table(RESULTS / "retrofit_per_dataset.md", "baseline RMSE")}
    deltas = main_rows().query("host == 'tiny_v3' and dataset == 'college' and variant == 'oa_only'")
    values = deltas["delta_rmse_pct"].to_numpy()
    assert len(values) == 3 and rows[("tiny_v3", "college")]["seeds"] == "3"
    assert rows[("tiny_v3", "college")]["oa_only"] == f"{values.mean():+.3f} ± {np.std(values, ddof=1):.3f}"
    assert rows[("tiny_v2", "college")]["o_closed"] == "not run"


@pytest.mark.parametrize(
    "name", ["retrofit_table.md", "retrofit_per_dataset.md", "retrofit_times.md", "decomposition.md"]
)
def test_no_cell_of_the_record_tables_is_wider_than_30_characters(name):
    widest = max((cell for row in table_lines(RESULTS / name) for cell in row), key=len)
    assert len(widest) <= 30, widest


@pytest.mark.parametrize("stem", ["retrofit_table", "retrofit_per_dataset"])
def test_each_tex_is_a_booktabs_table_of_its_md_cells(stem):
    tex = (RESULTS / f"{stem}.tex").read_text()
    rules = [r"\toprule", r"\midrule", r"\bottomrule"]
    assert [tex.count(rule) for rule in rules] == [1, 1, 1]
    top, mid, bottom = (tex.index(rule) for rule in rules)
    assert top < mid < bottom
    body = tex[mid:bottom].splitlines()[1:]
    rows = record_table(RESULTS / f"{stem}.md", "host")  # the file's first table
    assert len(body) == len(rows) and len(body[0].split(" & ")) == len(rows[0])
    first = list(rows[0].values())
    minus = first[3].replace("-", r"\ensuremath{-}")  # a number's sign is a minus in math mode, never a hyphen
    assert body[0].startswith(first[0].replace("_", r"\_") + " & ") and f" & {minus} & " in body[0]
    assert not re.search(r"(?<![\w.{])-[\d.]", "\n".join(body)), "a hyphen for a minus sign"  # {: an exponent


def test_every_table_and_the_readme_name_the_arms_as_the_configs_do():
    arms = set(yaml.safe_load((ROOT / "retrofit/configs/decomposition/sink_presence.yaml").read_text())["arms"])
    assert set(pd.read_csv(RESULTS / ARMS_CSV)["arm"]) == arms
    assert {r["arm"] for r in record_table(RESULTS / "decomposition.md", "arm")} == arms
    said = re.findall(r"arm `(\w+)`", (ROOT / "README.md").read_text())
    assert said and set(said) <= arms


@pytest.mark.parametrize("made", [False, True], ids=["no-folder", "no-sweep"])
def test_a_results_dir_without_a_sweeps_csv_names_the_folder_and_the_key(tmp_path, made):
    """`retrofit tables results_dir=<folder without CSVs>` said "pass a retrofit_rmse.csv", a file the
    job takes no key for."""
    folder = tmp_path / "results"
    if made:
        folder.mkdir()
    with pytest.raises(RunnerError) as err:
        read_records(folder / CSV)
    what = "holds no retrofit_rmse.csv, so no sweep wrote there" if made else "does not exist"
    assert one_line(err) == (
        f"{folder} {what}; pass results_dir=<the results_dir of a sweep that ran> (e.g. outputs/quick, which make "
        "quick writes)"
    )


@pytest.mark.slow
def test_make_tables_over_unchanged_csvs_leaves_git_clean(tmp_path):
    """`make tables` used to rewrite its row of results/command_times.csv on every run, so a re-render
    whose tables and plots came out byte-identical still left git dirty; it now times itself into the
    untracked outputs/ (`make tables-time` records the time)."""
    names = ["Makefile", ".gitignore", "pyproject.toml", "constraints.txt", "configs", "experiments", "results"]
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", *names], capture_output=True, check=True)
    for name in tracked.stdout.decode().split("\0")[:-1]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "copy"]):
        subprocess.run([*git, *command], check=True)
    venv = ROOT / ".venv"
    made = subprocess.run(
        ["make", "-C", str(tmp_path), "tables", f"VENV={venv}", "-o", str(venv / ".installed")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.count("wrote ") >= 2 * len(FOLDERS)
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=True)
    assert status.stdout == ""
    assert (tmp_path / "outputs" / "command_times.csv").read_text().count("\ntables,") == 1
