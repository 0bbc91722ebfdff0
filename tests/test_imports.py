"""The import contract: data flows one way through the layers, and no package reaches into
another package's private (underscore) modules or names.

The layers follow the flow of the data: a study spec is read (``data``), models are fitted
(``models``), the test set corrupted (``corruption``), predictions stored (``store``); then the
store is read into metrics (``metrics``), summarised with intervals and tests (``analysis``)
and shown (``report``). Each package may import only the packages upstream of it in
``ALLOWED``, plus the foundation modules every layer shares (errors, checks, text helpers).
``workflows`` (what a user does: ingest, recalibrate, report …) may import every package
below it; the facade (``relcol/__init__``, which only assembles names), ``relcol.plot`` and
the command line (``cli/``) sit on top and may import any package, but only through its
public names. A module named in a string for a lazy import (the facade's map, an
``import_module`` call) counts as imported.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: package → the packages it may import (besides itself and FOUNDATION).
ALLOWED: dict[str, set[str]] = {
    "store": set(),
    "data": {"store"},
    "corruption": set(),
    "models": set(),
    "study": {"data", "corruption", "models", "store"},
    "metrics": {"store"},
    "analysis": {"metrics", "store"},
    # presentation only: it renders the analysis' tables; the metric registry gives labels
    "report": {"analysis", "metrics"},
    # what a user does, end to end: every package below it
    "workflows": {
        "store",
        "data",
        "corruption",
        "models",
        "study",
        "metrics",
        "analysis",
        "report",
    },
}
#: Top-level modules every layer may import; they import nothing but each other.
FOUNDATION = {
    "relcol.errors",
    "relcol.checks",
    "relcol.text",
    "relcol._interrupts",
    "relcol._cluster",
    "relcol._memory",
    "relcol._lazy",
}
#: The facade and the command line: may import every package (public names only).
FACADE = {"relcol", "relcol.cli", "relcol.plot"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "cli":  # installed as relcol.cli
        parts = ["relcol", *parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


SOURCES = {
    module_name(path): path
    for path in [*sorted((ROOT / "relcol").rglob("*.py")), *sorted((ROOT / "cli").rglob("*.py"))]
}
PACKAGES = {path.parent for path in SOURCES.values() if path.name == "__init__.py"}


def is_package(module: str) -> bool:
    return SOURCES[module].name == "__init__.py"


def imports(module: str) -> list[tuple[int, str, str | None]]:
    """(line, imported module, imported name or None) for every relcol import of ``module``."""
    found = []
    tree = ast.parse(SOURCES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package(module) else module.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join([*here, base] if base else here)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in SOURCES:  # `from relcol.metrics import _frames` imports a module
                    found.append((node.lineno, sub, None))
                else:
                    found.append((node.lineno, base, alias.name))
    # a module named in a string: the facade's lazy map, import_module("relcol.…")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "." in node.value and node.value in SOURCES:
                found.append((node.lineno, node.value, None))
    return [f for f in found if f[1] == "relcol" or f[1].startswith("relcol.")]


def layer(module: str) -> str:
    """The package a module belongs to ('store', 'metrics', …), or the module itself on top."""
    if module in FOUNDATION or module in FACADE or module.startswith("relcol.cli."):
        return "relcol.cli" if module.startswith("relcol.cli") else module
    return module.split(".")[1]


def owner(module: str) -> str | None:
    """The package a private module belongs to: relcol.metrics._exact → relcol.metrics."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return None


def violations(module: str) -> list[str]:
    src = layer(module)
    found = []
    for line, target, name in imports(module):
        where = f"{SOURCES[module].relative_to(ROOT)}:{line}: imports {target}"
        private_owner = owner(target)
        if private_owner is not None and not (module + ".").startswith(private_owner + "."):
            found.append(f"{where}, a private module of {private_owner}")
        if name is not None and name.startswith("_") and layer(target) != src:
            found.append(f"{where}.{name}, a private name of another package")
        dst = layer(target)
        if dst == src or target in FOUNDATION:
            continue
        if src in FOUNDATION:
            found.append(f"{where}: the foundation imports no package")
        elif dst in FACADE or target == "relcol":
            if src not in FACADE:
                found.append(f"{where}: nothing below the facade imports it")
        elif src not in FACADE and dst not in ALLOWED[src]:
            found.append(f"{where}: {src} may import only {sorted(ALLOWED[src])}")
    return list(dict.fromkeys(found))


def test_every_package_has_a_layer():
    packages = {module_name(p / "__init__.py") for p in PACKAGES} - FACADE
    assert {name.split(".")[1] for name in packages} == set(ALLOWED)
    assert all(name in SOURCES for name in FOUNDATION | FACADE)


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_imports_flow_one_way_through_public_names(module):
    assert not violations(module), "\n".join(violations(module))


def test_the_contract_catches_each_kind_of_breach(monkeypatch, tmp_path):
    bad = tmp_path / "relcol" / "metrics" / "_bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "from relcol.analysis import bootstrap\n"  # upstream imports downstream
        "from relcol.store._files import os_error\n"  # another package's private module
        "from relcol.store import _hidden\n"  # another package's private name
        "import relcol\n"  # the facade, from below it
        "from relcol.errors import ParameterError\n"  # allowed: foundation
        "from relcol.metrics._bins import bin_index\n"  # allowed: its own package
        "from . import _exact\n"  # allowed: relative, own package
        'LAZY = {"x": "relcol.store._files"}\n'  # a lazy import of a private module
    )
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    monkeypatch.setitem(SOURCES, "relcol.metrics._bad", bad)
    monkeypatch.setitem(SOURCES, "relcol.metrics._exact", bad)
    found = violations("relcol.metrics._bad")
    assert len(found) == 5, found
    assert "metrics may import only ['store']" in found[0]
    assert "a private module of relcol.store" in found[1]
    assert "_hidden, a private name" in found[2]
    assert "nothing below the facade" in found[3]
    assert "bad.py:8: imports relcol.store._files, a private module" in found[4]


# -- start-up: a command imports only the libraries it uses ---------------------------------

#: Libraries of fitting, statistics and drawing: seconds of start-up that reading a
#: warehouse with SQL, or checking its files, never needs; and pyarrow, which neither needs
#: (a query's result reaches polars through the Arrow C stream interface, not pyarrow).
HEAVY = ("sklearn", "lightgbm", "scipy", "matplotlib", "great_tables", "pandas", "pyarrow")


def loaded_after(args: list[str], watched: tuple[str, ...] = HEAVY) -> tuple[str, set[str]]:
    """Run ``relcol <args>`` in a fresh interpreter, as the console entry point does (SIGINT
    handler installed first): (what it printed, which of ``watched`` it imported)."""
    code = (
        "import io, json, sys, contextlib\n"
        "from relcol import _interrupts\n"
        "from relcol.cli import main\n"
        "_interrupts.install()\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        f"        main({args!r}, standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(json.dumps([out.getvalue(), [m for m in {watched!r} if m in sys.modules]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    printed, loaded = json.loads(done.stdout.splitlines()[-1])
    return printed, set(loaded)


@pytest.fixture(scope="module")
def small_warehouse(tmp_path_factory):
    """Two cells of a binary classifier written through the store (no model fitted)."""
    import polars as pl

    from relcol.store import PREDICTIONS, Warehouse

    wh = Warehouse(tmp_path_factory.mktemp("startup") / "warehouse")
    n = 40
    confidence = [0.5 + (i % 10) / 20 for i in range(n)]
    frame = pl.DataFrame(
        {
            "study": "s",
            "dataset": "d",
            "model": "m",
            "corruption": "none",
            "severity": [0.0] * (n // 2) + [0.5] * (n // 2),
            "seed": 0,
            "repeat": 0,
            "sample_id": [i % (n // 2) for i in range(n)],
            "label": None,
            "y_true": [i % 2 for i in range(n)],
            "y_clean": [i % 2 for i in range(n)],
            "y_pred": [(i // 3) % 2 for i in range(n)],
            "confidence": confidence,
            "correct": [i % 2 == (i // 3) % 2 for i in range(n)],
            "proba": [[1 - c, c] if (i // 3) % 2 else [c, 1 - c] for i, c in enumerate(confidence)],
            "run_id": "r",
        }
    ).select(pl.col(c).cast(t) for c, t in PREDICTIONS.items())
    with wh.ingest("s") as staging:
        staging.write_part(frame)
    return wh, frame


def test_sql_imports_the_store_and_duckdb_only(small_warehouse):
    wh, frame = small_warehouse
    query = "SELECT count(*) AS n, sum(n) AS rows FROM calibration"
    printed, loaded = loaded_after(
        ["sql", "--warehouse", str(wh.root), "--format", "csv", query], (*HEAVY, "numpy")
    )
    assert printed == f"n,rows\n2,{frame.height}\n"  # the query ran: 2 cells of 20 rows
    assert loaded == set()
    # a table is drawn by DuckDB: not even Polars is imported
    printed, loaded = loaded_after(
        ["sql", "--warehouse", str(wh.root), query], (*HEAVY, "numpy", "polars")
    )
    assert cells_of(printed) == ["2", str(frame.height)] and loaded == set()
    printed, loaded = loaded_after(
        ["shell", "--warehouse", str(wh.root), "--print-init"], (*HEAVY, "numpy", "polars")
    )
    assert "CREATE OR REPLACE VIEW calibration AS" in printed and loaded == set()


def cells_of(table: str) -> list[str]:
    """The values of a drawn table's one row (the line after its ├─┤ rule)."""
    lines = table.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if line.startswith("├")) + 1]
    return [cell.strip() for cell in row.strip("│").split("│")]


def test_check_and_help_import_no_heavy_library(small_warehouse):
    wh, _ = small_warehouse
    printed, loaded = loaded_after(["check", "--warehouse", str(wh.root)])
    assert printed.startswith("checked ") and printed.endswith(": intact\n")
    assert loaded == set()
    printed, loaded = loaded_after(["--help"], (*HEAVY, "polars", "duckdb", "numpy"))
    assert "Commands:" in printed and loaded == set()


def test_ingesting_predictions_imports_no_model_report_or_table_library(tmp_path):
    # the workflows import each name on first use: predictions made elsewhere are read and
    # stored, nothing is fitted or drawn
    rows = ["sample_id,y_true,y_pred,confidence"] + [
        f"{i},{i % 2},{(i // 3) % 2},{0.5 + (i % 10) / 20}" for i in range(40)
    ]
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    wh = tmp_path / "wh"
    args = ["ingest", "--predictions", str(tmp_path / "p.csv"), "--name", "x"]
    watched = (*HEAVY, "numba", "relcol.analysis._bootstrap")
    printed, loaded = loaded_after([*args, "--warehouse", str(wh), "--json"], watched)
    assert json.loads(printed)["rows"] == 40
    # nor SciPy: the corruption operators and the log-probability helpers are not needed
    assert loaded == set(), loaded


def test_the_report_imports_no_model_library(tiny_warehouse, tmp_path):
    # scikit-learn alone takes about a second to import: a report fits nothing; nor does it
    # need scipy.stats (0.7 s; its quantiles are scipy.special's functions, its ranks
    # compiled) or scipy.optimize (0.3 s; recalibration and the corruptions' rates fit)
    out = tmp_path / "report"
    where = ["--warehouse", str(tiny_warehouse.root), "--out", str(out)]
    args = ["report", *where, "--bootstrap", "20", "-q"]
    _, loaded = loaded_after(args, (*HEAVY, "scipy.stats", "scipy.optimize"))
    assert (out / "index.html").is_file()
    assert loaded.isdisjoint({"sklearn", "lightgbm", "scipy.stats", "scipy.optimize"}), loaded


def test_a_report_of_a_study_that_is_not_there_says_so_before_importing_the_reports_libraries(
    small_warehouse,
):
    # the tables' and the page's libraries (about 2 s) are imported once the drawing workers
    # are started; a study or a warehouse that is not there is said before that
    wh, _ = small_warehouse
    watched = (*HEAVY, "relcol.analysis._bootstrap", "relcol.report._html")
    for where, error in ((wh.root, "'nope'"), (wh.root / "missing", "no warehouse at")):
        code = (
            "import sys\n"
            "from relcol.cli import main\n"
            "try:\n"
            f"    main(['report', '--warehouse', {str(where)!r}, '--study', 'nope'])\n"
            "except SystemExit as exit:\n"
            f"    print(exit.code, [m for m in {watched!r} if m in sys.modules])\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert error in done.stderr and done.stdout == "2 []\n", (done.stdout, done.stderr)


@pytest.mark.parametrize(
    "first", ["import relcol.report", "import relcol; relcol.report", "from relcol import report"]
)
def test_relcol_report_is_the_function_and_the_package_in_either_order(
    first, tiny_warehouse, tmp_path
):
    # Python binds the subpackage relcol.report as the attribute of that name whenever it is
    # imported: it must still write a report when called, and still be the package
    out = tmp_path / "report"
    code = (
        f"{first}\nimport relcol, relcol.report as pages\n"
        f"result = relcol.report({str(tiny_warehouse.root)!r}, study='tiny', out={str(out)!r},"
        " bootstrap=0)\n"
        "print(type(result).__name__, result.html.name, pages.render_html.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ReportResult", "index.html", "render_html"]
    assert (out / "index.html").is_file()


#: What the report-tables step computes (``relcol.analysis.summary_tables`` and
#: ``figure_tables``, called by ``relcol.report_tables``): the report draws these tables
#: and imports none of them.
COMPUTED_BEFORE_RENDERING = {
    "degradation_summary",
    "worst_gaps",
    "verdicts",
    "realised_rates",
    "realised_trends",
    "break_grid",
    "on_realised_axis",
    "macro_rows",
    "macro_tables",
    "bin_errors",
    "oracle_risk",
    "reliability_bins",
    "confidence_histograms",
}
#: The report's two entry points for a caller who gives only the metric tables
#: (``write_report``, ``terminal_summary``): they complete the summaries once, before
#: drawing, with the same function the report-tables step calls.
COMPLETES_SUMMARIES = {"relcol.report._html", "relcol.report._terminal"}


@pytest.mark.parametrize("module", sorted(m for m in SOURCES if m.startswith("relcol.report")))
def test_the_report_draws_the_summaries_and_computes_none(module):
    names = {name for _, target, name in imports(module) if layer(target) == "analysis"}
    assert not names & COMPUTED_BEFORE_RENDERING, sorted(names & COMPUTED_BEFORE_RENDERING)
    if module not in COMPLETES_SUMMARIES:
        assert "summary_tables" not in names


def test_the_wheel_lists_every_package():
    """pyproject.toml names its packages one by one: a new folder left out of the list
    would be missing from the wheel (an editable install does not notice)."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {module_name(path.parent / "__init__.py") for path in SOURCES.values()}
    # sql/, sql/views/, sql/macros/: the views' and macros' files
    assert set(setuptools["packages"]) == folders | {
        "relcol.sql",
        "relcol.sql.views",
        "relcol.sql.macros",
    }
    assert setuptools["package-dir"]["relcol.sql"] == "sql"


def test_opening_a_warehouse_from_python_loads_the_store_alone(small_warehouse):
    # a notebook that opens a warehouse to list or query it needs no statistics
    wh, _ = small_warehouse
    watched = (*HEAVY, "numba", "relcol.analysis", "relcol.metrics", "relcol.study")
    code = (
        "import json, sys, relcol\n"
        f"wh = relcol.open_warehouse({str(wh.root)!r})\n"
        f"print(json.dumps([wh.studies(), [m for m in {watched!r} if m in sys.modules]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    studies, loaded = json.loads(done.stdout)
    assert studies == ["s"] and loaded == []
