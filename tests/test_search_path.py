"""A search path reads no code (`retrofit.jobs.sources`): a `pkg://` or `structured://` entry naming
a package of one's own, from the command line, `--config-path` or a root config under
`--config-dir`, is refused in one line before the package is imported, on every entry path."""

from pathlib import Path

import pytest
from processes import run_hydra

from retrofit.jobs.sources import PACKAGES

ROOT = Path(__file__).resolve().parents[1]
SWEEP = str(ROOT / "experiments" / "sweep.py")
PLANTED = "hydra.searchpath=[pkg://retrofit.configs,pkg://planted]"


def _planted(folder: Path) -> Path:
    """A package `planted` under `folder` whose import writes `folder/marker` (and holds a config)."""
    (folder / "planted" / "experiment").mkdir(parents=True)
    (folder / "planted" / "__init__.py").write_text(f"open({str(folder / 'marker')!r}, 'w').write('imported')\n")
    (folder / "planted" / "experiment" / "x.yaml").write_text("# @package _global_\nseed: 3\n")
    return folder / "marker"


def _root_config(folder: Path) -> None:
    """A root config of one's own, `folder/mine.yaml` (for `--config-dir`), whose search path names `planted`."""
    folder.mkdir()
    (folder / "mine.yaml").write_text(
        "defaults:\n  - sweep\n  - _self_\nhydra:\n  searchpath:\n    - pkg://retrofit.configs\n    - pkg://planted\n"
    )


@pytest.mark.parametrize(
    "command, entry",
    [
        ([PLANTED], "pkg://planted (hydra.searchpath in command-line)"),
        (["hydra.searchpath=[pkg://retrofit.configs,pkg://planted/experiment]", "--help"], "pkg://planted/experiment"),
        (["-m", "seed=0,1", "hydra.searchpath=[pkg://retrofit.configs,structured://planted]"], "structured://planted"),
        (["--config-path", "pkg://planted"], "pkg://planted (main)"),
        (["--config-dir", "{tmp}/own", "--config-name", "mine"], "pkg://planted (hydra.searchpath in the root config)"),
        (["--config-dir", "{tmp}/own", "--config-name", "mine", "--cfg", "job"], "pkg://planted"),
    ],
    ids=["command-line", "help", "structured-multirun", "config-path", "root-config", "cfg"],
)
@pytest.mark.parametrize("program", [[SWEEP], ["-m", "retrofit", "sweep"]], ids=["script", "module"])
def test_a_package_on_the_search_path_is_refused_before_it_is_imported(tmp_path, program, command, entry):
    marker = _planted(tmp_path)
    _root_config(tmp_path / "own")
    args = [arg.format(tmp=tmp_path) for arg in command]
    out = run_hydra(*program, *args, cwd=tmp_path, PYTHONPATH=f"{ROOT}:{tmp_path}")
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"error: {entry}") and "imports its" in out.stderr, out.stderr
    assert "file://<folder>" in out.stderr
    assert not marker.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["own", "planted"]  # no outputs/ either


def test_the_listed_packages_still_compose(tmp_path):
    """The listed packages (Hydra's, the project's built-in variants) and a folder: a run of
    `--cfg job` composes with them all on the search path."""
    marker = _planted(tmp_path)
    searchpath = f"hydra.searchpath=[{','.join(f'pkg://{p}' for p in PACKAGES)},file://{tmp_path / 'planted'}]"
    out = run_hydra(SWEEP, searchpath, "+experiment=x", "--cfg", "job", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "\nseed: 3\n" in out.stdout and not marker.exists()


LAUGHS = "".join(f"{a}: &{a} [{', '.join([f'*{b}'] * 9)}]\n" for b, a in zip("abcdefg", "bcdefgh", strict=True))
"""A "billion laughs" YAML: each list repeats nine aliases of the one before, 9^8 (43 million) values in all."""


def test_a_config_file_whose_aliases_expand_to_millions_of_values_is_refused_before_it_is_copied(tmp_path):
    """OmegaConf copied such a dataset YAML under --config-dir value by value, for hours, in silence."""
    (tmp_path / "own" / "dataset").mkdir(parents=True)
    laughs = tmp_path / "own" / "dataset" / "laughs.yaml"
    laughs.write_text(f"a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n{LAUGHS}name: laughs\n")
    out = run_hydra(SWEEP, "--config-dir", str(tmp_path / "own"), "dataset=laughs", cwd=tmp_path, timeout=120)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"error: {laughs} holds more than 100000 values once its aliases"), out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["own"]  # no outputs/ either


def test_a_variant_file_whose_aliases_expand_too_far_or_hold_themselves_is_refused(tmp_path):
    from retrofit.errors import RetrofitError
    from retrofit.variants import resolve_variant

    many, itself = tmp_path / "many.yaml", tmp_path / "itself.yaml"
    many.write_text(f"a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n{LAUGHS}")
    itself.write_text("tau: &t [*t]\n")
    with pytest.raises(RetrofitError, match=rf"^variant file {many} holds more than 100000 values"):
        resolve_variant(str(many))
    with pytest.raises(RetrofitError, match=rf"^variant file {itself}: an alias \(\*name\) lies inside its own anchor"):
        resolve_variant(str(itself))
