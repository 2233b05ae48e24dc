"""A frame of table cells (every cell already text) as Markdown or as a LaTeX booktabs table.

Both renderings show the same cells, so a `.md` and its `.tex` twin never disagree. `latex` escapes
every cell and header (pandas' Styler, `escape="latex"`: `_`, `%`, `&`, ...) and then spells the
non-ASCII signs the tables use as LaTeX (`LATEX_SIGNS`), so the output compiles with pdflatex and
`\\usepackage{booktabs}` alone.
"""

import re

import pandas as pd

LATEX_SIGNS = {
    "Δ": r"\ensuremath{\Delta}",
    "±": r"\ensuremath{\pm}",
    "×": r"\ensuremath{\times}",
    "≈": r"\ensuremath{\approx}",
    "–": "--",
    "−": "-",
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "|": r"\ensuremath{|}",
}
"""Sign -> its LaTeX spelling, applied after escaping (in text mode `<`, `>` and `|` print as ¡, ¿ and —)."""
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
    for sign, spelled in LATEX_SIGNS.items():
        text = text.replace(sign, spelled)
    return text
