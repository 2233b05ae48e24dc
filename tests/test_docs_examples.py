"""Every ```python block of README.md and docs/*.md runs, and every command of their ```bash blocks
runs or is left out by `SKIPPED` with its reason.

Python blocks run in a namespace holding the names they use (`example_namespace`: a small
regression table split into X_train, y_train, X_test, y_test, the same table as `frame`, `X`, `y`,
removal `coalitions`). Commands run as written from a scratch start directory holding the CSV they
name, with their `/tmp/` outputs moved into it and `SMALL` settings appended (one member, no
timing, one dataset and seed), so they check that each command is accepted and completes, not its
numbers.
"""

import re
import shlex

import numpy as np
import pandas as pd
import pytest
from processes import ROOT, run_python

pytestmark = pytest.mark.slow

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.S | re.M)

SKIPPED = {
    r"^make ": "a make target: the record jobs run for minutes and rewrite results/; `make test` is this suite",
    r"^RETROFIT_RECORD=1": "writes the committed record (results/)",
    r"^git ": "changes the repository",
    r"^python experiments/sink_mass.py$": "the record's sink-mass step (`make retrofit` runs it)",
    r"host.path=/models/": "needs the reader's own checkpoint file",
    r"bash gpu/check.sh": "needs a CUDA device: a GPU node runs it",
    r"bash gpu/pretrain.sh": "needs a CUDA device (tests/test_gpu_pretrain.py runs it with DEVICE=cpu)",
    r"-m dataset=auto,wage seed=0,1,2,3,4": "a 10-job grid and its re-aggregation (minutes on 2 cores)",
    r"\+experiment=paper_table": "the paper grid (hours); `make retrofit` records it",
    r"^mkdir -p /my/conf": "writes a variant folder outside the scratch directory; the same search path is tested by "
    "tests/test_sweep_config.py",
    r"file:///my/conf": "needs the variant folder of the command before it",
}
"""A pattern (`re.search`) of a command -> why that command is not run here."""

SWEEP_SMALL = ["n_estimators=1", "timing.rounds=0", "cache_dir=cache"]
SMALL = {
    "sweep.py": SWEEP_SMALL,
    "retrofit sweep": SWEEP_SMALL,
    "retrofit explain": ["n_estimators=1"],
    "retrofit columns": [],
    "retrofit find_tables": [],
    "sink_mass.py": ["seeds=[0]", "datasets=[diabetes]"],
}
"""A command's job -> the settings appended to make it small."""


def blocks(language: str) -> list[tuple[str, str]]:
    """(`<file>:<line>`, code) of every ```<language> block of the docs."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for match in BLOCK.finditer(text):
            if match.group(1) == language:
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{path.relative_to(ROOT)}:{line}", match.group(2)))
    return found


def commands() -> list[tuple[str, str]]:
    """(`<file>:<line>`, command) of every command of the ```bash blocks: continued lines joined,
    comments and heredoc bodies left out (a heredoc's command carries the whole block's text)."""
    found = []
    for where, code in blocks("bash"):
        lines = iter(code.replace("\\\n", " ").splitlines())
        for line in lines:
            command = line.split(" #")[0].strip()
            if "<<'EOF'" in command:  # the heredoc's lines up to EOF are its text, not commands
                body = []
                for text in lines:
                    if text == "EOF":
                        break
                    body.append(text)
                command = " ".join([command, *body])
            if command and not command.startswith("#"):
                found.append((where, command))
    return found


@pytest.fixture
def example_namespace(tmp_path, monkeypatch):
    """What the python blocks use, small: 40 rows, 3 features, a target of their curves."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=40)
    frame = pd.DataFrame(X, columns=["area", "rooms", "age"]).assign(price=y)
    coalitions = np.array([[True, True, True], [True, False, True], [False, False, False]])
    return {"X": X, "y": y, "frame": frame, "coalitions": coalitions} | dict(
        zip(("X_train", "X_test", "y_train", "y_test"), (X[:30], X[30:33], y[:30], y[30:33]), strict=True)
    )


PYTHON_FILES = sorted({where.split(":")[0] for where, _ in blocks("python")})


@pytest.mark.parametrize("document", PYTHON_FILES)
def test_python_examples_run(document, example_namespace):
    """A document's python blocks run in order in one namespace (a later block uses an earlier one's names)."""
    for where, code in blocks("python"):
        if where.startswith(f"{document}:"):
            exec(compile(code, where, "exec"), example_namespace)


def _skip_reason(command: str) -> str | None:
    return next((reason for pattern, reason in SKIPPED.items() if re.search(pattern, command)), None)


@pytest.mark.parametrize(("where", "command"), commands(), ids=[f"{w} {c[:50]}" for w, c in commands()])
def test_bash_example_runs(where, command, tmp_path):
    reason = _skip_reason(command)
    if reason is not None:
        pytest.skip(reason)
    words = shlex.split(command.replace("/tmp/", f"{tmp_path}/").replace(" experiments/", f" {ROOT}/experiments/"))
    assert words[0] == "python", f"{where}: `{command}` is neither run here nor skipped with a reason (SKIPPED)"
    job = next(small for key, small in SMALL.items() if key in command)
    (tmp_path / "data").mkdir()
    pd.DataFrame({"area": np.arange(40.0), "price": np.arange(40.0) % 7 + np.arange(40.0) / 10}).to_csv(
        tmp_path / "data" / "my_houses.csv", index=False
    )
    out = run_python(*words[1:], *job, cwd=tmp_path)
    assert out.returncode == 0, f"{where}: `{command}` failed:\n{out.stderr[-2000:]}"


def test_every_skip_reason_still_matches_a_command():
    """A skip whose command left the docs would silently skip nothing (or a new command)."""
    listed = [command for _, command in commands()]
    assert [pattern for pattern in SKIPPED if not any(re.search(pattern, command) for command in listed)] == []
