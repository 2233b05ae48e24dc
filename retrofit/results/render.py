"""A frame of table cells (every cell already text) as Markdown or as a LaTeX booktabs table.

Both renderings show the same cells, so a `.md` and its `.tex` twin never disagree. `latex` escapes
every cell and header (pandas' Styler, `escape="latex"`: `_`, `%`, `&`, ...) and then spells the
non-ASCII signs the tables use as LaTeX (`LATEX_SIGNS`), a number's `-` as a minus sign, so the
output compiles with pdflatex and `\\usepackage{booktabs}` alone. `percent` is the one format of
every percentage cell.
"""

import math
import re

import pandas as pd

DECIMALS = 3
"""The decimals of a percentage cell (`percent`)."""
PLAIN, RAISED = "-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"
"""An exponent's characters, and as `percent` writes them (superscript)."""
POWER = re.compile(f"×10([{RAISED}]+)")
"""A power of ten as `percent` writes it (`×10⁻⁵`), which `latex` sets as `\\times 10^{-5}`."""
MINUS = re.compile(r"(?<![\w.])-(?=[\d.])")
"""A hyphen that is a number's sign (not one inside a word, a date or `1e-06`), which `latex` sets as a minus."""


def percent(value: float, signed: bool = True) -> str:
    """A percentage cell, one rule for every column of them (ΔRMSE %, its CI, the noise floor): fixed with
    `DECIMALS` decimals, or, for a value that would show no digit there (|value| < 0.0005 at 3), two
    significant digits times a power of ten (`6.3×10⁻⁵`); `signed`: with its sign, + or -."""
    value, sign = (0.0 if value == 0 else value), "+" if signed else ""  # never a signed zero
    fixed = f"{value:{sign}.{DECIMALS}f}"
    if value == 0 or float(fixed) != 0 or math.isnan(value):
        return fixed
    mantissa, exponent = f"{value:{sign}.1e}".split("e")
    return f"{mantissa}×10{str(int(exponent)).translate(str.maketrans(PLAIN, RAISED))}"


LATEX_SIGNS = {
    "Δ": r"\ensuremath{\Delta}",
    "±": r"\ensuremath{\pm}",
    "×": r"\ensuremath{\times}",
    "≈": r"\ensuremath{\approx}",
    "–": "--",
    "−": r"\ensuremath{-}",
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "|": r"\ensuremath{|}",
}
"""Sign -> its LaTeX spelling, applied after escaping (in text mode `<`, `>` and `|` print as ¡, ¿ and —);
before them a number's sign (`MINUS`) and a power of ten (`POWER`) go to math mode, where `-` is a minus."""
LATEX_SPECIALS = {
    "\\": r"\textbackslash ",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde ",
    "^": r"\textasciicircum ",
}
"""LaTeX's special characters -> their escaped spelling (pandas' own for a cell)."""


def markdown(cells: pd.DataFrame) -> str:
    """`cells` as a Markdown table (pipe format, no index), the cells as they are."""
    return cells.to_markdown(index=False, disable_numparse=True)


def latex(cells: pd.DataFrame, caption: str, label: str) -> str:
    """`cells` as a LaTeX `table` float: a booktabs `tabular` (`\\toprule`, `\\midrule`,
    `\\bottomrule`), text columns left-aligned and the rest right-aligned (`text_columns`), under
    `caption` (escaped like the cells) and `label`, ending in a newline."""
    aligned = "".join("l" if column in text_columns(cells) else "r" for column in cells.columns)
    styled = cells.style.hide(axis="index").format(escape="latex").format_index(escape="latex", axis=1)
    body = styled.to_latex(
        hrules=True, column_format=aligned, caption=escaped(caption), label=label, position_float="centering"
    )
    return "% needs \\usepackage{booktabs}\n" + _signs(body)


def text_columns(cells: pd.DataFrame) -> list[str]:
    """The columns of `cells` that name things rather than give numbers: those of whose cells none
    starts with a digit, a sign or a bracket."""
    numeric = cells.astype(str).apply(lambda column: column.str.match(r"^[-+\d\[(]").any())
    return [column for column, is_number in numeric.items() if not is_number]


def escaped(text: str) -> str:
    """`text` with LaTeX's special characters escaped (`LATEX_SPECIALS`), as Styler escapes a cell,
    and its Markdown code spans (`` `x` ``) set in `\\texttt`: for the caption, which Styler leaves as it is."""
    plain = "".join(LATEX_SPECIALS.get(char, char) for char in text)
    return re.sub(r"`([^`]*)`", r"\\texttt{\1}", plain)


def _signs(text: str) -> str:
    text = MINUS.sub(r"\\ensuremath{-}", text)
    plain = str.maketrans(RAISED, PLAIN)
    text = POWER.sub(lambda power: rf"\ensuremath{{\times 10^{{{power[1].translate(plain)}}}}}", text)
    for sign, spelled in LATEX_SIGNS.items():
        text = text.replace(sign, spelled)
    return text
