"""The LaTeX exports: ASCII text pdflatex reads, two-line headers, tables that fit the page.

The compile tests run Debian's pdflatex (texlive-latex-base and texlive-latex-recommended) on
every table a report exports, each in a minimal document that loads only the packages
``relcol.report._latex.PACKAGES`` names, and read its log: no error, nothing wider than the
line (Overfull \\hbox) beyond a rounding tolerance, no float taller than the page. Skipped
when pdflatex is absent, unless ``RELCOL_REQUIRE_LATEX`` is set (as ``.ci/run`` does after
installing it): then a missing pdflatex fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from great_tables import GT, html

import relcol
from relcol.report._exports import _latex
from relcol.report._latex import (
    BLOCK_PT,
    PACKAGES,
    PART_ROWS,
    _keep_columns,
    column_blocks,
    fit_page,
    latex_ready,
    latex_text,
)

#: Overfull boxes up to this many points are rounding, not a table off the page.
TOLERANCE_PT = 1.0


# Text ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "latex"),
    [
        ("gap Δ = conf − acc", r"gap \ensuremath{\Delta} = conf \ensuremath{-} acc"),
        ("ρ ≤ τ, d ≥ 0", r"\ensuremath{\rho} \ensuremath{\leq} \ensuremath{\tau}, d \ensuremath{\geq} 0"),
        ("acc₀ κₑ x²", r"acc\textsubscript{0} \ensuremath{\kappa}\textsubscript{e} x\textsuperscript{2}"),
        ("0.1–0.5 …", r"0.1--0.5 \ldots{}"),
        ("naïve café", r'na\"{\i}ve caf\'{e}'),
        ("p̂ · 2 × 3", r"\^{p} \ensuremath{\cdot} 2 \ensuremath{\times} 3"),
        ("a_b & 50% {x} #1 $", r"a\_b \& 50\% \{x\} \#1 \$"),
        ("~^\\<>|", r"\textasciitilde{}\textasciicircum{}\textbackslash{}\textless{}\textgreater{}\textbar{}"),
        ("中\x1b", r"\textless{}U+4E2D\textgreater{}\textless{}U+001B\textgreater{}"),
    ],
)  # fmt: skip
def test_text_becomes_ascii_latex(text, latex):
    assert latex_text(text) == latex
    assert latex_text(text).isascii()


def test_latex_already_written_keeps_its_commands():
    assert latex_text(r"\multicolumn{2}{c}{gap Δ} \\", special=False) == (
        r"\multicolumn{2}{c}{gap \ensuremath{\Delta}} \\"
    )


def test_an_html_label_keeps_its_line_break_and_small_print():
    """The glued header of the issue: `gaussian\\_noised = 1`."""
    gt = GT(pl.DataFrame({"a": [1.0]})).cols_label(a=html("gaussian_noise<br><small>d = 1</small>"))
    label = latex_ready(gt)._boxhead[0].column_label.to_latex()
    assert label == (
        r"\begin{tabular}[b]{@{}c@{}}gaussian\_noise \\ {\footnotesize d = 1}\end{tabular}"
    )
    # markup open across a break is closed before it and reopened after it
    gt = gt.cols_label(a=html("<em>x &amp; y<br>z</em> κ<sub>e</sub><span>!</span>"))
    label = latex_ready(gt)._boxhead[0].column_label.to_latex()
    assert label == (
        r"\begin{tabular}[b]{@{}c@{}}\emph{x \& y} \\ \emph{z} "
        r"\ensuremath{\kappa}\textsubscript{e}!\end{tabular}"
    )


# The page --------------------------------------------------------------------------------------


def grouped_table(groups: dict[str, int], columns: int = 4) -> GT:
    rows = sum(groups.values())
    frame = pl.DataFrame(
        {
            "group": [g for g, n in groups.items() for _ in range(n)],
            "row": [f"row{i}" for i in range(rows)],
            **{f"c{j}": np.arange(rows) * 0.5 + j for j in range(columns)},
        }
    )
    return (
        GT(frame, rowname_col="row", groupname_col="group", id="t")
        .tab_header(title="A long table Δ", subtitle="ρ")
        .fmt_number([f"c{j}" for j in range(columns)], decimals=2)
        .tab_source_note("note")
    )


def parts_of(latex: str) -> list[str]:
    return re.findall(r"\\begin\{table\}.*?\\end\{table\}", latex, flags=re.S)


def body_rows(part: str) -> list[str]:
    return re.findall(r"^(row\d+) &", part, flags=re.M)


def test_a_long_table_is_split_into_parts_that_repeat_the_header_and_cut_groups():
    latex = _latex(grouped_table({"alpha": 45, "beta": 10, "gamma": 20}))
    parts = parts_of(latex)
    # alpha: its heading and 29 rows, then "alpha (continued)" and 16 more; beta fits whole
    # after them (18 + 11 <= 30); gamma (21 lines) does not fit in what is left of a part
    # already half full, so it starts the third part
    assert [len(body_rows(p)) for p in parts] == [29, 16 + 10, 20]
    rows = [r for p in parts for r in body_rows(p)]
    assert rows == [f"row{i}" for i in range(75)]  # every row once, in order
    for index, part in enumerate(parts):
        body = part[part.index("\n\\midrule") : part.index("\\bottomrule")]
        lines = len(re.findall(r"\\\\(\[[^\]]*\])?\s*$", body, flags=re.M))
        assert lines <= PART_ROWS  # body rows and group headings
        assert part.count("\\toprule") == part.count("\\bottomrule") == 1
        assert ("continued, part" in part) == (index > 0)
        assert ("\nnote" in part) == (index == len(parts) - 1)  # the notes close the table
    assert r"\multicolumn{5}{l}{alpha \emph{(continued)}}" in parts[1]
    assert "(continued)" not in parts[2]
    assert latex.isascii()


def test_a_short_table_is_one_float_at_its_natural_width():
    latex = _latex(grouped_table({"alpha": 3}))
    assert len(parts_of(latex)) == 1 and "continued" not in latex
    assert r"\begin{tabular}{" in latex and "tabular*" not in latex and "extracolsep" not in latex
    # shrunk only when wider than the line
    assert r"\ifdim\wd0>\linewidth\resizebox{\linewidth}{!}{\usebox0}\else\usebox0\fi\par" in latex


def test_a_wide_table_is_cut_into_blocks_of_columns_that_repeat_the_row_labels():
    # 20 columns of "c1" … "c19" over values such as "12.50": 5 characters, 5 × 4.2 + 12 =
    # 33 pt each, 660 pt in all; the row labels ("row74") 5 × 4.2 + 12 = 33 pt. Room beside
    # them: 560 − 33 = 527 pt, so two blocks, of 10 columns (330 pt) each
    gt = grouped_table({"alpha": 75}, columns=20)
    assert BLOCK_PT == 560
    assert column_blocks(gt.as_latex(), 20) == [range(0, 10), range(10, 20)]
    latex = _latex(gt)
    parts = parts_of(latex)
    # each block split by rows too: 30 body lines a part (the heading, then 29, 29, 17 rows)
    assert [len(body_rows(p)) for p in parts] == [29, 29, 17] * 2
    for block, columns in ((parts[:3], range(0, 10)), (parts[3:], range(10, 20))):
        for part in block:
            labels = re.search(r"^  & (.*) \\\\ $", part, flags=re.M).group(1).split(" & ")
            assert labels == [f"c{j}" for j in columns]
        assert [r for p in block for r in body_rows(p)] == [f"row{i}" for i in range(75)]
    assert "(columns 1--10 of 20)" in parts[0]
    assert "(continued, columns 1--10 of 20, part 2 of 3)" in parts[1]
    assert "(continued, columns 11--20 of 20, part 1 of 3)" in parts[3]
    assert sum("\nnote" in p for p in parts) == 1 and "\nnote" in parts[-1]
    # a table that fits is one block
    assert column_blocks(grouped_table({"alpha": 3}, columns=8).as_latex(), 8) == [range(8)]


@pytest.mark.parametrize(
    "block", [range(0, 3), range(3, 6), range(2, 5), range(0, 6, 2), range(5, 6)]
)
def test_a_block_of_columns_is_what_great_tables_writes_with_the_others_hidden(block):
    """Blocks are cut from the LaTeX already written (rendering again per block would cost as
    much as the first rendering each time); the cut must equal great-tables' own output."""
    gt = (
        grouped_table({"alpha": 3, "beta": 2}, columns=6)
        .tab_spanner("first Δ", columns=["c0", "c1", "c2"])
        .tab_spanner("second", columns=["c4", "c5"])
        .cols_label(c3=html("three<br><small>d = 1</small>"))
        .sub_missing()
    )
    ready = latex_ready(gt)
    shown = [f"c{j}" for j in range(6)]

    def words(latex: str) -> list[str]:
        return [" ".join(line.split()) for line in latex.splitlines() if line.strip()]

    cut = _keep_columns(ready.as_latex(), [0, *(1 + j for j in block)])
    hidden = ready.cols_hide([c for j, c in enumerate(shown) if j not in block]).as_latex()
    assert cut is not None and words(cut) == words(hidden)


def test_output_of_another_shape_is_left_alone():
    assert fit_page("\\begin{tabular}{l}\nx\n\\end{tabular}\n") == (
        "\\begin{tabular}{l}\nx\n\\end{tabular}\n"
    )


# pdflatex --------------------------------------------------------------------------------------


def pdflatex() -> str:
    binary = shutil.which("pdflatex")
    if binary is None:
        if os.environ.get("RELCOL_REQUIRE_LATEX"):
            pytest.fail("RELCOL_REQUIRE_LATEX is set but pdflatex was not found")
        pytest.skip(
            "no pdflatex (Debian: apt-get install texlive-latex-base texlive-latex-recommended)"
        )
    return binary


def compile_tables(tables: list[Path], folder: Path) -> dict[str, str]:
    """pdflatex's log for each of ``tables``, input one after the other (each from a new
    page) into one minimal document, by file name; fails naming the table on an error."""
    folder.mkdir(parents=True, exist_ok=True)
    inputs = "".join(
        f"\\clearpage\\typeout{{RELCOL-TABLE {tex.name}}}\n\\input{{{tex.resolve().as_posix()}}}\n"
        for tex in tables
    )
    (folder / "doc.tex").write_text(
        "\\documentclass{article}\n"
        f"\\usepackage{{{','.join(PACKAGES)}}}\n"
        f"\\begin{{document}}\n{inputs}\\clearpage\\typeout{{RELCOL-TABLE end}}\n"
        "\\end{document}\n",
        encoding="ascii",
    )
    done = subprocess.run(
        [pdflatex(), "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "doc.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = (folder / "doc.log").read_text(encoding="latin-1")
    # what the log says between a table's mark and the next belongs to that table (a
    # float is output by the \clearpage before the next mark)
    pieces = re.split(r"^RELCOL-TABLE (\S+)$", log, flags=re.M)
    logs = dict(zip(pieces[1::2], pieces[2::2], strict=True))
    for name, text in logs.items():
        errors = [line for line in text.splitlines() if line.startswith("!")]
        assert not errors, f"{name}: {errors[:3]}"
    assert done.returncode == 0 and "end" in logs, done.stdout[-2000:]
    assert (folder / "doc.pdf").stat().st_size > 0
    return {name: logs[name] for name in (tex.name for tex in tables)}


def compile_table(tex: Path, folder: Path) -> str:
    """pdflatex's log for ``tex`` input into a minimal document; fails on an error."""
    return compile_tables([tex], folder)[tex.name]


def assert_clean(tex: Path) -> None:
    """ASCII only, and no HTML tag printed as text (a label's markup lost on the way)."""
    text = tex.read_text(encoding="utf-8")
    assert text.isascii(), tex.name
    leaked = re.findall(r"\\textless\{\}/?(?:br|span|small|em|sub|sup|strong|b|i|div|p)\b", text)
    assert not leaked, (tex.name, leaked)


def assert_fits(log: str, name: str) -> None:
    overfull = [float(p) for p in re.findall(r"Overfull \\[hv]box \(([\d.]+)pt too", log)]
    assert all(p <= TOLERANCE_PT for p in overfull), f"{name}: overfull by {overfull} pt"
    assert "Float too large" not in log, name


@pytest.fixture(scope="module")
def tiny_tables(tiny_warehouse, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("latex") / "report"
    relcol.report(tiny_warehouse, study="tiny", out=out, bootstrap=20)
    return out / "tables"


@pytest.fixture(scope="module")
def simulated_tables(tmp_path_factory) -> Path:
    """The consistency section in full: a simulated study with its four conditions."""
    root = tmp_path_factory.mktemp("latex-sim")
    relcol.simulate_consistency(
        root / "wh", name="sim", samples=60, replicates=3, families=("balanced",)
    )
    relcol.report(root / "wh", study="sim", out=root / "report", bootstrap=20)
    return root / "report" / "tables"


def test_every_table_of_the_tiny_study_compiles_and_fits(tiny_tables, tmp_path):
    exported = sorted(tiny_tables.glob("*.tex"))
    # every table shown on the page has its LaTeX; a table too long for the page lives only
    # as files (plain HTML, CSV, Parquet) and has none
    page = (tiny_tables.parent / "index.html").read_text()
    shown = {p.stem for p in tiny_tables.glob("*.html") if f'id="{p.stem}"' in page}
    assert {p.stem for p in exported} == shown
    assert len(shown) >= 10
    for tex in exported:
        assert_clean(tex)
    for name, log in compile_tables(exported, tmp_path).items():
        assert_fits(log, name)
    # the tables of the issue: Δ, −, ρ, τ, ≤, ₀ and the glued two-line header
    glance = (tiny_tables / "relcol-glance.tex").read_text()
    assert r"gap \ensuremath{\Delta}" in glance
    assert r"\begin{tabular}[b]{@{}c@{}}gaussian\_noise \\ {\footnotesize d = 1}" in glance


def test_every_table_of_a_simulated_study_compiles_and_fits(simulated_tables, tmp_path):
    exported = sorted(simulated_tables.glob("*.tex"))
    assert any(p.stem.startswith("relcol-consistency-") for p in exported)
    for tex in exported:
        assert_clean(tex)
    for name, log in compile_tables(exported, tmp_path).items():
        assert_fits(log, name)


def test_a_long_wide_table_compiles_into_pages_that_fit(tmp_path):
    tex = tmp_path / "long.tex"
    tex.write_text(_latex(grouped_table({"alpha": 45, "beta": 10, "gamma": 50}, columns=16)))
    log = compile_table(tex, tmp_path / "long")
    assert_fits(log, "long.tex")
    whole = (tmp_path / "long" / "doc.log").read_text(encoding="latin-1")
    pages = int(re.search(r"Output written on .*?\((\d+) pages?", whole).group(1))
    assert pages >= 2


def test_every_character_latex_text_knows_compiles(tmp_path):
    """Each mapping is a command pdflatex has with only the packages PACKAGES names."""
    from relcol.report import _latex as module

    known = (
        "".join([*module._MATH, *module._SUBSCRIPTS, *module._SUPERSCRIPTS, *module._TEXT])
        + "áàâãäåçéèêëíìîïñóòôõöúùûüýÿčřšžőűąęėū"
    )
    frame = pl.DataFrame({"text": [known[i : i + 20] for i in range(0, len(known), 20)]})
    tex = tmp_path / "chars.tex"
    tex.write_text(_latex(GT(frame, id="chars").tab_header(title=known[:30])))
    assert tex.read_text().isascii()
    log = compile_table(tex, tmp_path / "chars")
    assert_fits(log, "chars.tex")


def test_the_tables_of_multilabel_and_recalibrated_studies_compile_and_fit(tmp_path):
    """The sections the built-in studies do not have: multi-label, per-class, recalibration."""
    from tests.test_multilabel import random_file
    from tests.test_recalibration import softmax_file

    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(random_file(0, samples=80), wh, name="ml", model="m")
    relcol.ingest_predictions(softmax_file(1, n=600), wh, name="soft", model="net")
    relcol.recalibrate(wh, study="soft", methods=["temperature", "isotonic"], name="recal")
    exported = []
    for study in ("ml", "recal"):
        relcol.report(wh, study=study, out=tmp_path / study, bootstrap=0)
        exported += sorted((tmp_path / study / "tables").glob("*.tex"))
    names = {p.stem for p in exported}
    assert any("multilabel" in n for n in names) and any("recal" in n for n in names), names
    for tex in exported:
        assert_clean(tex)
    for name, log in compile_tables(exported, tmp_path / "doc").items():
        assert_fits(log, name)
