"""LaTeX for the exported tables: text pdflatex reads, and a table that fits the page.

great-tables writes a table's LaTeX (``GT.as_latex``) but leaves the text as it is: Δ, −,
ρ, τ, ≤ or ₀ in a label stop pdflatex ("Unicode character not set up for use with LaTeX"),
an HTML label loses its tags, so a two-line header (``gaussian_noise<br><small>d =
1</small>``) is glued into one word, and a wide table runs off the page. Here:

- every character outside ASCII becomes ASCII LaTeX (:func:`latex_text`): Greek letters
  and mathematical signs in math mode (``\\ensuremath{\\Delta}``), sub- and superscript digits
  and letters as ``\\textsubscript`` / ``\\textsuperscript``, dashes and quotes as their
  LaTeX ligatures, accented Latin letters as accent commands (``\\'{e}``); any other
  character (a Chinese class name, say) is shown as its code point, ``<U+4E2D>``, not
  dropped. Control characters are shown the same way;
- an HTML label keeps its line breaks (a one-column ``tabular`` inside the cell), ``<small>``,
  ``<em>``/``<i>``, ``<strong>``/``<b>``, ``<sub>`` and ``<sup>``; other tags are dropped;
- the table is set at its natural width and shrunk to the line width only when it is wider
  (never enlarged); a table wider than :data:`BLOCK_PT` (estimated) is cut into blocks of
  columns of about equal width, each repeating the row labels and saying which columns it
  holds; and a table with more than :data:`PART_ROWS` body rows is split into
  parts of at most that many rows, each its own float with the column headers repeated,
  preferably where a row group starts (a group cut in two repeats its heading, marked
  "continued").

The result needs, in the preamble: ``booktabs`` (rules), ``caption`` (``\\caption*``) and
``graphicx`` (``\\resizebox``); see :data:`PACKAGES`.
"""

from __future__ import annotations

import dataclasses
import html
import re
import unicodedata

from great_tables import GT
from great_tables._gt_data import ColInfoTypeEnum
from great_tables._text import BaseText, Html

#: The LaTeX packages an exported table needs.
PACKAGES = ("booktabs", "caption", "graphicx")

#: The most body rows (group headings count) of one float; a longer table is split.
PART_ROWS = 30

#: The widest a table may be, in points at ``\small`` (estimated), before it is cut into
#: blocks of columns that each repeat the row labels: about 1.6 times the 345 pt line of
#: LaTeX's article class, so no block is shrunk below about 0.6 of its size there.
BLOCK_PT = 560.0
#: The estimate: an average character of ``\small`` Computer Modern, and the space
#: (``\tabcolsep`` on both sides) around each column; within 5 % of pdflatex's widths on
#: the report's tables.
_CHAR_PT = 4.2
_COLUMN_PT = 12.0

_GREEK = {
    **dict(
        zip(
            "αβγδεζηθικλμνξπρστυφχψωϵϑϕς",
            "alpha beta gamma delta varepsilon zeta eta theta iota kappa lambda mu nu xi pi rho "
            "sigma tau upsilon phi chi psi omega epsilon vartheta varphi varsigma".split(),
            strict=True,
        )
    ),
    **dict(
        zip(
            "ΓΔΘΛΞΠΣΥΦΨΩ",
            "Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split(),
            strict=True,
        )
    ),
}
_MATH = {
    **{letter: "\\" + name for letter, name in _GREEK.items()},
    "−": "-",
    "≤": r"\leq",
    "≥": r"\geq",
    "≠": r"\neq",
    "≈": r"\approx",
    "±": r"\pm",
    "∓": r"\mp",
    "×": r"\times",
    "÷": r"\div",
    "·": r"\cdot",
    "∙": r"\cdot",
    "∧": r"\wedge",
    "∨": r"\vee",
    "¬": r"\neg",
    "→": r"\rightarrow",
    "←": r"\leftarrow",
    "↔": r"\leftrightarrow",
    "⇒": r"\Rightarrow",
    "∞": r"\infty",
    "∈": r"\in",
    "∉": r"\notin",
    "⊂": r"\subset",
    "⊆": r"\subseteq",
    "∪": r"\cup",
    "∩": r"\cap",
    "∅": r"\emptyset",
    "∑": r"\sum",
    "∏": r"\prod",
    "√": r"\surd",
    "∝": r"\propto",
    "∼": r"\sim",
    "≡": r"\equiv",
    "′": r"\prime",
    "∂": r"\partial",
    "∇": r"\nabla",
    "⌊": r"\lfloor",
    "⌋": r"\rfloor",
    "⌈": r"\lceil",
    "⌉": r"\rceil",
    "∣": r"\mid",
    "µ": r"\mu",
    "ℓ": r"\ell",
}
# Greek capitals that look like Latin ones have no macro of their own.
_MATH |= {
    g: r"\mathrm{" + latin + "}" for g, latin in zip("ΑΒΕΖΗΙΚΜΝΟΡΤΧ", "ABEZHIKMNOPTX", strict=True)
}

_SUBSCRIPTS = dict(
    zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜᵢⱼ", "0123456789+-=()aeoxhklmnpstij", strict=True)
)
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿ", "0123456789+-=()in", strict=True))

_TEXT = {
    "–": "--",
    "—": "---",
    "‘": "`",
    "’": "'",
    "‚": ",",
    "“": "``",
    "”": "''",
    "„": ",,",
    "«": r"\ensuremath{\ll}",
    "»": r"\ensuremath{\gg}",
    "…": r"\ldots{}",
    "\u00a0": "~",
    "\u2009": r"\,",
    "\u202f": r"\,",
    "\u2002": r"\enskip{}",
    "\u2003": r"\quad{}",
    "\u200b": "",  # a zero-width space has nothing to show
    "•": r"\textbullet{}",
    "†": r"\dag{}",
    "‡": r"\ddag{}",
    "§": r"\S{}",
    "¶": r"\P{}",
    "©": r"\copyright{}",
    "®": r"\textregistered{}",
    "™": r"\texttrademark{}",
    "°": r"\textdegree{}",
    "‰": r"\textperthousand{}",
    "€": r"\texteuro{}",
    "£": r"\pounds{}",
    "¢": r"\textcent{}",
    "¥": r"\textyen{}",
    "¿": r"\textquestiondown{}",
    "¡": r"\textexclamdown{}",
    "ß": r"\ss{}",
    "æ": r"\ae{}",
    "Æ": r"\AE{}",
    "œ": r"\oe{}",
    "Œ": r"\OE{}",
    "ø": r"\o{}",
    "Ø": r"\O{}",
    "ł": r"\l{}",
    "Ł": r"\L{}",
    "ı": r"\i{}",
    "ȷ": r"\j{}",
    "✓": r"\ensuremath{\surd}",
}

# Combining accents (after Unicode decomposition) -> LaTeX accent command.
_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
    "\u0323": "d",
    "\u0331": "b",
}

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    **{c: "\\" + c for c in "&%$#_{}"},
}


def latex_text(text: str, *, special: bool = True) -> str:
    r"""``text`` as pdflatex-safe ASCII LaTeX.

    ``special=False`` leaves LaTeX's own special characters (``\ { } & _`` ...) alone: for
    LaTeX that great-tables already wrote, whose only problem is the characters beyond ASCII.

    Examples
    --------
    >>> latex_text("gap Δ ≤ 0.05 (τ₀), naïve_bayes")
    'gap \\ensuremath{\\Delta} \\ensuremath{\\leq} 0.05 (\\ensuremath{\\tau}\\textsubscript{0}), na\\"{\\i}ve\\_bayes'
    >>> latex_text("中")
    '\\textless{}U+4E2D\\textgreater{}'
    """
    out: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        if char in _ACCENTS and out:
            # an accent applies to what precedes it (a letter, or an already accented one)
            base = out.pop()
            base = {"i": r"\i", "j": r"\j"}.get(base, base)  # dotless under an accent
            out.append(f"\\{_ACCENTS[char]}{{{base}}}")
        elif special and char in _SPECIAL:
            out.append(_SPECIAL[char])
        elif char == "\n" or " " <= char <= "~":
            out.append(char)
        elif char == "\t":
            out.append(" ")
        elif char in _MATH:
            out.append(rf"\ensuremath{{{_MATH[char]}}}")
        elif char in _SUBSCRIPTS:
            out.append(rf"\textsubscript{{{_SUBSCRIPTS[char]}}}")
        elif char in _SUPERSCRIPTS:
            out.append(rf"\textsuperscript{{{_SUPERSCRIPTS[char]}}}")
        elif char in _TEXT:
            out.append(_TEXT[char])
        else:
            # shown, not dropped: the code point, in ASCII
            out.append(rf"\textless{{}}U+{ord(char):04X}\textgreater{{}}")
    return "".join(out)


# HTML labels ----------------------------------------------------------------------------------

_TAGS = {
    "small": (r"{\footnotesize ", "}"),
    "em": (r"\emph{", "}"),
    "i": (r"\emph{", "}"),
    "strong": (r"\textbf{", "}"),
    "b": (r"\textbf{", "}"),
    "sub": (r"\textsubscript{", "}"),
    "sup": (r"\textsuperscript{", "}"),
}
_TAG = re.compile(r"<\s*(/?)\s*([a-zA-Z0-9]+)[^>]*>")


class _LatexHtml(Html):
    """An ``html()`` label that keeps its line breaks and simple markup in LaTeX."""

    def to_latex(self) -> str:
        lines: list[list[str]] = [[]]
        open_tags: list[str] = []  # the markup open at this point, outermost first

        def close() -> str:
            return "".join(_TAGS[t][1] for t in reversed(open_tags))

        at = 0
        for match in _TAG.finditer(self.text):
            lines[-1].append(latex_text(html.unescape(self.text[at : match.start()])))
            at = match.end()
            end, tag = match.group(1), match.group(2).lower()
            if tag == "br":
                # a group cannot span a line of the inner tabular: close and reopen it
                lines[-1].append(close())
                lines.append([_TAGS[t][0] for t in open_tags])
            elif tag in _TAGS and not end:
                lines[-1].append(_TAGS[tag][0])
                open_tags.append(tag)
            elif tag in _TAGS and open_tags and open_tags[-1] == tag:
                lines[-1].append(_TAGS[open_tags.pop()][1])
        lines[-1] += [latex_text(html.unescape(self.text[at:])), close()]
        cells = ["".join(line) for line in lines]
        if len(cells) == 1:
            return cells[0]
        return r"\begin{tabular}[b]{@{}c@{}}" + r" \\ ".join(cells) + r"\end{tabular}"


def _label(value):
    return _LatexHtml(value.text) if type(value) is Html else value


def latex_ready(gt: GT) -> GT:
    """``gt`` with its ``html()`` labels (columns, spanners, heading, stub head, notes) read by
    :class:`_LatexHtml`, so their line breaks and markup survive into LaTeX."""
    boxhead = type(gt._boxhead)(
        [dataclasses.replace(c, column_label=_label(c.column_label)) for c in gt._boxhead]
    )
    spanners = type(gt._spanners)(
        [dataclasses.replace(s, spanner_label=_label(s.spanner_label)) for s in gt._spanners]
    )
    heading = dataclasses.replace(
        gt._heading, title=_label(gt._heading.title), subtitle=_label(gt._heading.subtitle)
    )
    stubhead = gt._stubhead
    if isinstance(stubhead, list):
        stubhead = [_label(s) for s in stubhead]
    elif isinstance(stubhead, BaseText):
        stubhead = _label(stubhead)
    notes = [_label(n) for n in gt._source_notes]
    return gt._replace(
        _boxhead=boxhead,
        _spanners=spanners,
        _heading=heading,
        _stubhead=stubhead,
        _source_notes=notes,
    )


def table_latex(gt: GT) -> str:
    """``gt`` as LaTeX that pdflatex compiles and that fits the page.

    Raises what ``GT.as_latex()`` raises (NotImplementedError for nanoplots, say).
    """
    ready = latex_ready(gt)
    title = ready._heading.title
    title = title.to_latex() if isinstance(title, BaseText) else latex_text(title or "")
    latex = ready.as_latex()
    shown = [c.var for c in ready._boxhead if c.type == ColInfoTypeEnum.default]
    blocks = column_blocks(latex, len(shown))
    if len(blocks) == 1:
        return latex_text(fit_page(latex, title), special=False)
    pieces = []
    stub = _stub_columns(latex, len(shown))
    for index, block in enumerate(blocks):
        part = _keep_columns(latex, [*range(stub), *(stub + at for at in block)])
        if part is None:  # a shape the slicing does not know: let great-tables redo it
            part = ready.cols_hide([v for at, v in enumerate(shown) if at not in block]).as_latex()
        pieces.append(
            fit_page(
                part,
                title,
                columns=f"columns {block.start + 1}--{block.stop} of {len(shown)}",
                first=index == 0,
                last=index == len(blocks) - 1,
            )
        )
    return latex_text("".join(pieces), special=False)


# The page -------------------------------------------------------------------------------------

_BEGIN = re.compile(r"\\begin\{tabular\*?\}(\{\\linewidth\})?\{(@\{\\extracolsep\{\\fill\}\})?")
_GROUP = re.compile(r"^\\multicolumn\{\d+\}\{l\}\{(.*)\}\s*\\\\(\[[^\]]*\])?\s*$")
_ROW_END = re.compile(r"\\\\(\[[^\]]*\])?\s*$")


def fit_page(
    latex: str,
    title: str | None = None,
    *,
    columns: str = "",
    first: bool = True,
    last: bool = True,
) -> str:
    """great-tables' LaTeX, set to fit the page (see the module's docstring).

    ``latex`` is the output of ``GT.as_latex()`` (a ``table`` float holding a ``tabular*``
    of the line width); ``title`` (LaTeX) heads the continued parts of a split table.
    For one block of a table cut by columns: ``columns`` names the block ("columns 1--8
    of 29"), ``first`` says whether it is the first (which keeps the full caption) and
    ``last`` whether it is the last (which ends with the notes). Output that does not have
    that shape is returned unchanged.
    """
    lines = latex.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if _BEGIN.match(line))
        end = next(
            i for i in range(len(lines) - 1, start, -1) if lines[i].startswith(r"\end{tabular")
        )
        bottom = max(i for i in range(start, end) if lines[i].startswith(r"\bottomrule"))
        body_at = next(i for i in range(start, bottom) if lines[i].startswith(r"\midrule"))
    except (StopIteration, ValueError):
        return latex
    if not (lines[0].startswith(r"\begin{table}") and lines[-1].startswith(r"\end{table}")):
        return latex
    # \fontsize{12pt}: great-tables' 16 px; the document's own size reads better
    preamble = [
        line for line in lines[1:start] if line.strip() and not line.startswith(r"\fontsize")
    ]
    begin = _BEGIN.sub(r"\\begin{tabular}{", lines[start], count=1)
    header = [begin, *lines[start + 1 : body_at]]
    footer = [r"\bottomrule", r"\end{tabular}"]
    notes = lines[end + 1 : -1]
    parts = _parts(lines[body_at:bottom])
    out = [lines[0]]
    for index, body in enumerate(parts):
        caption = preamble
        if index or not first:
            said = [columns] if columns else []
            said += [f"part {index + 1} of {len(parts)}"] if len(parts) > 1 else []
            more = "".join(f", {bit}" for bit in said)
            caption = [rf"\caption*{{{{\large {title or ''}}} (continued{more})}}"]
        elif columns and preamble:
            # the caption's closing brace is its last line
            caption = [*preamble[:-1], rf"{{\small ({columns})}}", preamble[-1]]
        out += [
            *([] if index == 0 else [r"\end{table}", lines[0]]),
            r"\centering",
            *caption,
            r"\small",
            r"\sbox0{%",
            *header,
            *body,
            *footer,
            "}%",
            r"\ifdim\wd0>\linewidth\resizebox{\linewidth}{!}{\usebox0}\else\usebox0\fi\par",
        ]
    out += [*(notes if last else []), r"\end{table}"]
    # a bar outside the column specification is text: under pdflatex's default font
    # encoding a bare | prints as a dash
    return (
        "\n".join(line if _BEGIN.match(line) else line.replace("|", r"\textbar{}") for line in out)
        + "\n"
    )


def column_blocks(latex: str, columns: int) -> list[range]:
    r"""The table's ``columns`` (its data columns, after the row labels) in consecutive
    blocks of about equal estimated width, each at most :data:`BLOCK_PT` with the row
    labels; one block when the whole table fits.

    The estimate counts the visible characters of the widest cell of each column (its label
    included; a command such as ``\ensuremath{\Delta}`` is one character, the lines of a
    two-line label are measured apart).
    """
    lines = latex.splitlines()
    try:
        begin = next(i for i, line in enumerate(lines) if _BEGIN.match(line))
        bottom = next(i for i in range(begin, len(lines)) if lines[i].startswith(r"\bottomrule"))
        body_at = next(i for i in range(begin, bottom) if lines[i].startswith(r"\midrule"))
    except StopIteration:
        return [range(columns)]
    rows = [lines[body_at - 1]]  # the column labels
    rows += [
        line
        for line in lines[body_at:bottom]
        if _ROW_END.search(line) and not line.startswith(r"\multicolumn")
    ]
    cells = [c for c in (_ROW_END.sub("", row).split(" & ") for row in rows) if len(c) > columns]
    if not cells or columns < 2:
        return [range(columns)]
    stub = len(cells[0]) - columns
    widths = [
        max(_width(row[at]) for row in cells if len(row) == stub + columns)
        for at in range(stub + columns)
    ]
    room = BLOCK_PT - sum(widths[:stub])
    data = widths[stub:]
    total = sum(data)
    count = max(1, -(-total // max(room, 2 * max(data))))  # ceil; a column always fits alone
    if count == 1:
        return [range(columns)]
    # each column to the block its middle falls in: consecutive, about equal widths
    blocks: list[list[int]] = [[] for _ in range(int(count))]
    before = 0.0
    for at, width in enumerate(data):
        blocks[min(int((before + width / 2) / total * count), int(count) - 1)].append(at)
        before += width
    return [range(b[0], b[-1] + 1) for b in blocks if b]


_SPAN = re.compile(r"^\\multicolumn\{(\d+)\}")
_CMIDRULE = re.compile(r"\\cmidrule(\([a-z]*\))?\{(\d+)-(\d+)\}")
_COLUMN_SPEC = re.compile(r"([lcr])(\|*)")


def _stub_columns(latex: str, columns: int) -> int:
    """How many LaTeX columns come before the ``columns`` data columns (the row labels)."""
    spec = _BEGIN.sub("", next(line for line in latex.splitlines() if _BEGIN.match(line)))
    return len(_COLUMN_SPEC.findall(spec.rstrip("}"))) - columns


def _keep_columns(latex: str, keep: list[int]) -> str | None:
    r"""great-tables' LaTeX with only the columns ``keep`` (0-based, row labels included):
    the column specification, every row (a cell spanning several columns spans those it
    keeps; one that keeps none goes) and the ``\cmidrule`` under the spanners. None when
    the table has a shape this does not read (then great-tables renders the block itself).
    Slicing the text once written costs nothing; rendering the table again per block costs
    as much as the first rendering each time.
    """
    lines = latex.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if _BEGIN.match(line))
        bottom = next(i for i in range(start, len(lines)) if lines[i].startswith(r"\bottomrule"))
    except StopIteration:
        return None
    head = _BEGIN.match(lines[start]).group(0)
    spec = lines[start][len(head) :]
    letters = _COLUMN_SPEC.findall(spec[:-1]) if spec.endswith("}") else []
    if "".join(a + b for a, b in letters) != spec[:-1]:
        return None
    total = len(letters)
    new = {old: at for at, old in enumerate(sorted(keep))}
    out = [
        *lines[:start],
        head + "".join(a + b for i, (a, b) in enumerate(letters) if i in new) + "}",
    ]
    body_at = next(
        i for i in range(start, bottom + 1) if lines[i].startswith((r"\midrule", r"\bottomrule"))
    )
    for row in range(start + 1, bottom):
        line = lines[row]
        if _CMIDRULE.search(line):
            rules = []
            for rule in _CMIDRULE.finditer(line):
                kept = [
                    new[i - 1] + 1 for i in range(int(rule[2]), int(rule[3]) + 1) if i - 1 in new
                ]
                if kept:
                    rules.append(rf"\cmidrule{rule[1] or ''}{{{kept[0]}-{kept[-1]}}}")
            if rules:
                out.append(" ".join(rules))
            continue
        end = _ROW_END.search(line)
        if not end:
            out.append(line)
            continue
        cells, at, kept_cells = line[: end.start()].split(" & "), 0, []
        for cell in cells:
            span = int(_SPAN.match(cell.lstrip())[1]) if _SPAN.match(cell.lstrip()) else 1
            kept = sum(1 for i in range(at, at + span) if i in new)
            if kept and span > 1:
                cell = _SPAN.sub(rf"\\multicolumn{{{kept}}}", cell.lstrip(), count=1)
            if kept:
                kept_cells.append(cell)
            at += span
        if at != total:
            return None
        if row < body_at and not "".join(kept_cells).strip():
            continue  # a spanner row with no spanner over these columns
        out.append(" & ".join(kept_cells).rstrip() + " " + line[end.start() :])
    return "\n".join([*out, *lines[bottom:]]) + "\n"


def _width(cell: str) -> float:
    r"""A cell's estimated width in points at ``\small`` (see ``column_blocks``)."""
    cell = re.sub(r"\\begin\{tabular\}\[b\]\{@\{\}c@\{\}\}|\\end\{tabular\}", "", cell)
    cell = re.sub(r"\\(footnotesize|small|large)\b", "", cell)
    widest = 0
    for line in cell.split(r"\\"):  # the lines of a two-line label
        line = re.sub(r"\\[a-zA-Z]+\{(?=[^}])", "{", line)  # \emph{x}: only x shows
        line = re.sub(r"\\[a-zA-Z]+(\{\})?|\\[^a-zA-Z]", "x", line)  # \Delta, \_: one
        widest = max(widest, len(line.replace("{", "").replace("}", "").strip()))
    return widest * _CHAR_PT + _COLUMN_PT


def _parts(body: list[str]) -> list[list[str]]:
    """The body's lines in parts of at most PART_ROWS rows (group headings count).

    A part ends before a group that would not fit in it whole, once the part is at least
    half full; a group longer than what is left is cut between rows, and the next part
    repeats its heading (rules included), marked continued.
    """
    groups: list[tuple[list[str], list[list[str]]]] = []  # (heading lines, rows' lines)
    pending: list[str] = []  # rules seen since the last row
    for line in body:
        if not _ROW_END.search(line):
            pending.append(line)
        elif _GROUP.match(line):
            groups.append(([*pending, line], []))
            pending = []
        else:
            if not groups:
                groups.append(([], []))
            heading, rows = groups[-1]
            if rows:
                rows.append([*pending, line])
            else:  # the rules between a heading and its first row belong to the heading
                heading += pending
                rows.append([line])
            pending = []
    parts: list[list[str]] = [[]]
    count = 0
    for heading, rows in groups:
        labelled = 1 if any(_GROUP.match(line) for line in heading) else 0
        whole = count + labelled + len(rows) <= PART_ROWS
        if count and (count + labelled + 1 > PART_ROWS or (not whole and count >= PART_ROWS // 2)):
            parts.append([])
            count = 0
        parts[-1] += heading
        count += labelled
        for row in rows:
            if count >= PART_ROWS:
                parts.append(_continued(heading))
                count = labelled
            parts[-1] += row
            count += 1
    parts[-1] += pending
    return parts


def _continued(heading: list[str]) -> list[str]:
    """A group's heading lines, its label marked continued."""
    out = []
    for line in heading:
        group = _GROUP.match(line)
        if group:
            label = group.group(1)
            at = line.rindex(label)
            line = line[:at] + label + r" \emph{(continued)}" + line[at + len(label) :]
        out.append(line)
    return out
