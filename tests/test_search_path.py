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
