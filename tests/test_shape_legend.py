"""The package's shape legend (`retrofit/__init__.py`): every axis letter a tensor name in the
library ends in has an entry, and every entry is used."""

import re
from pathlib import Path

import retrofit

SUFFIXED = re.compile(r"\b\w*[a-z]\w*?_([A-Za-z0-9]*[A-Z][A-Za-z0-9]*)\b")
"""A name with a shape suffix: a stem with a lower-case letter, then `_` and axis letters, one of
them upper-case (`x_BRE`, `log_p_BN`, `max_BHQ1`); constants (`KV_CACHE_REFUSAL`) have none."""

ENTRY = re.compile(r"^  (\S)  \S", re.MULTILINE)


def _legend() -> set[str]:
    return set(ENTRY.findall(retrofit.__doc__))


def _suffix_letters() -> dict[str, str]:
    """Each axis letter used in the library's sources -> one name that uses it."""
    used: dict[str, str] = {}
    for path in sorted(Path(retrofit.__file__).parent.rglob("*.py")):
        for match in SUFFIXED.finditer(path.read_text()):
            for letter in match.group(1):
                used.setdefault(letter, f"{match.group(0)} ({path.name})")
    return used


def test_the_suffix_pattern_reads_axis_letters_and_not_constants():
    names = "x_BRE log_p_BN max_BHQ1 k_BgND KV_CACHE_REFUSAL _RankRope tabpfn_v3_5 p_x"
    assert [m.group(1) for m in SUFFIXED.finditer(names)] == ["BRE", "BN", "BHQ1", "BgND"]


def test_every_axis_letter_in_the_library_is_in_the_legend():
    used = _suffix_letters()
    assert {"B", "R", "E", "b", "x", "1"} <= set(used)
    missing = {letter: name for letter, name in used.items() if letter not in _legend()}
    assert not missing, f"axis letters without a legend entry in retrofit/__init__.py: {missing}"


def test_every_legend_entry_is_used():
    assert not _legend() - set(_suffix_letters())
