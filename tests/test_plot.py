"""relcol.plot and the report figures it shares its drawing with: what is drawn is the
numbers computed independently here with numpy, markers are whole inside their panels,
legends fit their figures, and bad input gets one clear error."""

from __future__ import annotations

import contextlib
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np
import polars as pl
import pytest
from matplotlib.collections import LineCollection, PathCollection

import relcol.plot as rp
from relcol import report_tables
from relcol.analysis._bins import with_stage
from relcol.errors import ColumnNotFoundError, InputError, ParameterError
from relcol.report import _figures as F

M = 10


def _rows(seed: int = 0, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.2, 1.0, n)
    return c, rng.uniform(size=n) < c**2  # overconfident: accuracy c² at confidence c


def _bins(c: np.ndarray, z: np.ndarray, m: int = M):
    """Reference binning of docs/metrics.md: bins (k/M, (k+1)/M], the first [0, 1/M]."""
    index = np.clip(np.ceil(c * m).astype(int) - 1, 0, m - 1)
    out = {}
    for k in np.unique(index):
        mask = index == k
        out[k] = (mask.sum(), c[mask].mean(), z[mask].mean())
    return out


def _ece_mce(c: np.ndarray, z: np.ndarray, m: int = M) -> tuple[float, float]:
    stats = _bins(c, z, m).values()
    gaps = [abs(acc - conf) for _, conf, acc in stats]
    ece = sum(n * g for (n, _, _), g in zip(stats, gaps, strict=True)) / len(c)
    return ece, max(gaps)


def _points(ax) -> np.ndarray:
    """Every marker of the scatter collections on ``ax``, as (x, y) rows."""
    offsets = [c.get_offsets() for c in ax.collections if isinstance(c, PathCollection)]
    return np.concatenate([np.asarray(o) for o in offsets if len(o)])


def _frame_of_two():
    c1, z1 = _rows(0)
    c2, z2 = _rows(1, 2000)
    c2 = c2**2  # a second model: calibrated by construction (accuracy = confidence)
    frame = pl.DataFrame(
        {
            "confidence": np.r_[c1, c2],
            "correct": np.r_[z1, z2],
            "model": ["over"] * len(c1) + ["fair"] * len(c2),
        }
    )
    return frame, {"over": (c1, z1), "fair": (c2, z2)}


def test_reliability_points_are_the_bin_means_and_the_legend_has_ece_and_mce():
    frame, models = _frame_of_two()
    ax = rp.reliability_diagram(frame, by="model", bins=M)
    drawn = {tuple(np.round(p, 9)) for p in _points(ax)}
    expected = {
        (round(conf, 9), round(acc, 9))
        for c, z in models.values()
        for _, conf, acc in _bins(c, z).values()
    }
    assert drawn == expected
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    for text, (name, (c, z)) in zip(texts, models.items(), strict=True):
        ece, mce = _ece_mce(c, z)
        assert text == f"{name} (n = {len(c):,}) ECE {ece:.3f} · MCE {mce:.3f}"


def test_sparse_bins_are_faint_unjoined_and_without_interval():
    c = np.r_[np.full(50, 0.95), np.full(3, 0.55)]  # 3 rows in one bin: sparse
    z = np.r_[np.ones(40, bool), np.zeros(10, bool), np.ones(3, bool)]
    ax = rp.reliability_diagram(pl.DataFrame({"confidence": c, "correct": z}), bins=M)
    (line,) = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 2 and ln.get_xdata()[0] > 0.5]
    assert np.isnan(line.get_ydata()[0]) and line.get_ydata()[1] == pytest.approx(0.8)
    (whiskers,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    (segment,) = whiskers.get_segments()  # one interval: the solid bin's
    assert segment[0][0] == pytest.approx(0.95)
    solid, faint = (c for c in ax.collections if isinstance(c, PathCollection))
    assert solid.get_offsets().tolist() == [[pytest.approx(0.95), pytest.approx(0.8)]]
    assert faint.get_offsets().tolist() == [[pytest.approx(0.55), 1.0]]
    assert faint.get_alpha() < 1 and len(faint.get_facecolors()) == 0
    # area by share: the 50-row bin's marker is larger than the 3-row bin's
    assert solid.get_sizes()[0] > faint.get_sizes()[0]


def _whole_inside(ax) -> None:
    """Every marker of ``ax`` lies whole within the panel's frame, none clipped."""
    fig = ax.figure
    fig.canvas.draw()
    box = ax.get_window_extent()
    for collection in (c for c in ax.collections if isinstance(c, PathCollection)):
        assert not collection.get_clip_on()
        radius = np.sqrt(collection.get_sizes()) / 2 * fig.dpi / 72
        xy = ax.transData.transform(collection.get_offsets())
        r = np.broadcast_to(radius, (len(xy),))
        assert np.all(xy[:, 0] - r >= box.x0) and np.all(xy[:, 0] + r <= box.x1)
        assert np.all(xy[:, 1] - r >= box.y0) and np.all(xy[:, 1] + r <= box.y1)


def test_the_worst_failure_is_a_whole_marker_in_the_corner():
    # Confidence 1.0 and accuracy 0.1: the study's headline failure, every row in one bin.
    c = np.ones(200)
    z = np.arange(200) < 20
    ax = rp.reliability_diagram(pl.DataFrame({"confidence": c, "correct": z}), bins=M)
    assert _points(ax).tolist() == [[1.0, 0.1]]
    _whole_inside(ax)


@pytest.fixture(scope="module")
def tables(tiny_warehouse):
    return report_tables(tiny_warehouse, "tiny", bootstrap=0)


def _one_dataset(table: pl.DataFrame, dataset: str = "wine") -> pl.DataFrame:
    return table.filter((pl.col("dataset") == dataset) & pl.col("label").is_null())


def test_report_reliability_figure_prints_the_calibration_tables_ece_and_mce(tables):
    bins = _one_dataset(tables["reliability"].filter(pl.col("binning") == "width"))
    fig = F.reliability_figure(bins, edges=15, title="wine")
    cal = _one_dataset(tables["calibration"])
    printed = {}
    for ax in fig.axes:
        for text in ax.texts:
            if "ECE" in text.get_text():
                printed[ax] = re.findall(r"ECE (\d\.\d+) · MCE (\d\.\d+)", text.get_text())[0]
        _whole_inside(ax)
    assert len(printed) == len(fig.axes) == 3 * 5  # 3 models × (clean + 4 worst)
    expected = {
        (f"{r['ece']:.3f}", f"{r['mce']:.3f}")
        for r in cal.join(bins.select("model", "corruption", "severity").unique(), on=[
            "model", "corruption", "severity"]).iter_rows(named=True)
    }  # fmt: skip
    assert set(printed.values()) == expected


def test_plot_reads_the_report_tables(tables):
    cell = (pl.col("corruption") == "mcar") & (pl.col("stage") == "worst")
    rel = _one_dataset(tables["reliability"]).filter(cell & (pl.col("binning") == "width"))
    ax = rp.reliability_diagram(rel)
    assert [t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()] == (
        rel.get_column("model").unique(maintain_order=True).to_list()
    )
    assert {tuple(np.round(p, 9)) for p in _points(ax)} == {
        (round(a, 9), round(b, 9)) for a, b in rel.select("mean_confidence", "accuracy").rows()
    }
    _whole_inside(ax)

    cal = _one_dataset(tables["calibration"]).filter(pl.col("corruption") == "gaussian_noise")
    ax = rp.degradation_curve(cal, metric="ece")
    for line in ax.get_lines():
        model = cal.filter(pl.col("model") == line.get_label()).sort("severity")
        if model.is_empty():
            continue
        assert line.get_xdata().tolist() == model.get_column("severity").to_list()
        assert line.get_ydata().tolist() == model.get_column("ece").to_list()
    assert ax.get_ylabel() == "ECE"
    with pytest.raises(ParameterError, match="several corruption values"):
        rp.degradation_curve(_one_dataset(tables["calibration"]), by="model")


def test_risk_coverage_and_its_oracle_against_numpy():
    rng = np.random.default_rng(3)
    c = rng.permutation(np.linspace(0.5, 0.999, 200))  # distinct: coverage j/100 = 2j/200
    z = rng.uniform(size=200) < c
    ax = rp.risk_coverage(pl.DataFrame({"confidence": c, "correct": z}))
    curve, oracle = ax.get_lines()
    order = np.argsort(-c)
    accepted = np.arange(1, 201)
    risk = np.cumsum(~z[order]) / accepted
    assert curve.get_xdata() == pytest.approx(np.arange(1, 101) / 100)
    assert curve.get_ydata() == pytest.approx(risk[1::2])
    error = 1 - z.mean()
    kappa = np.arange(1, 101) / 100
    assert oracle.get_ydata() == pytest.approx(np.maximum(kappa - (1 - error), 0) / kappa)
    assert oracle.get_linestyle() == ":"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "all rows",
        "oracle (errors rejected first)",
    ]


def test_confidence_by_correctness_halves_are_the_numpy_histograms():
    frame, models = _frame_of_two()
    ax = rp.confidence_by_correctness(frame.to_pandas(), by="model", bins=M)  # pandas too
    outlines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 2 * M]
    assert len(outlines) == 4  # right and wrong, two models
    grid = np.linspace(0, 1, M + 1)
    for i, (c, z) in enumerate(models.values()):
        for side, outcome in ((-1, z), (1, ~z)):
            index = np.clip(np.ceil(c[outcome] * M).astype(int) - 1, 0, M - 1)
            counts = np.bincount(index, minlength=M)
            half = side * 0.42 * np.repeat(counts / counts.max(), 2)
            line = outlines[2 * i + (side > 0)]
            assert line.get_xdata() == pytest.approx(i + half)
            assert line.get_ydata() == pytest.approx(np.repeat(grid, 2)[1:-1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["over", "fair"]


def test_ax_is_drawn_on_and_returned():
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2)
    frame, _ = _frame_of_two()
    assert rp.reliability_diagram(frame, by="model", ax=left) is left
    assert rp.risk_coverage(frame, by="model", ax=right) is right
    assert len(right.get_lines()) == 4  # two curves and their oracles on one axes
    plt.close(fig)


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        ([0.5, 0.7], InputError, "must be a polars or pandas DataFrame"),
        (pl.DataFrame({"confidence": [0.5, 1.5], "correct": [True, False]}), InputError,
         r"'confidence' must be in \[0, 1\] without nulls; 1 rows are not, e.g. 1.5"),
        (pl.DataFrame({"confidence": [0.5, None], "correct": [True, False]}), InputError,
         "without nulls"),
        (pl.DataFrame({"confidence": [0.5], "correct": [1]}), InputError, "must be boolean"),
        (pl.DataFrame({"conf": [0.5], "correct": [True]}), ColumnNotFoundError,
         "column 'confidence' not found; available: 'conf', 'correct'"),
        (pl.DataFrame({"confidence": [], "correct": []}, schema={"confidence": pl.Float64,
         "correct": pl.Boolean}), InputError, "no rows"),
    ],
)  # fmt: skip
def test_bad_input_gets_one_clear_line(data, error, message):
    with pytest.raises(error, match=message) as caught:
        rp.reliability_diagram(data)
    assert "\n" not in str(caught.value)


def test_y_true_and_y_pred_give_correctness_and_bins_are_checked():
    frame = pl.DataFrame({"confidence": [0.9, 0.8], "y_true": [1, 2], "y_pred": [1, 0]})
    ax = rp.reliability_diagram(frame, bins=2)
    assert _points(ax).tolist() == [[pytest.approx(0.85), 0.5]]
    with pytest.raises(ParameterError, match=r"bins must be an int in \[1, 1000\]. Got 0."):
        rp.reliability_diagram(frame, bins=0)


# Report figures: legends fit, labels clear of legends, narrow studies readable --------------


def _legend_fits_and_is_clear(fig) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0
        for ax in fig.axes:
            labels = [ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels()]
            for text in labels:
                if text.get_text() and text.get_visible():
                    assert not box.overlaps(text.get_window_extent(renderer)), text.get_text()
        for text in fig.texts:  # suptitle, supxlabel, subtitle
            if text.get_text():
                assert not box.overlaps(text.get_window_extent(renderer)), text.get_text()


def test_single_corruption_figures_are_readable_with_whole_legends(tables):
    one = {
        name: _one_dataset(tables[name]).filter(pl.col("corruption") == "mcar")
        for name in ("reliability", "confidence_histogram", "risk_coverage", "calibration",
                     "consistency")
    }  # fmt: skip
    auroc = {(m, "mcar", 0.5): 0.7 for m in one["calibration"].get_column("model").unique()}
    figures = [
        F.reliability_figure(one["reliability"].filter(pl.col("binning") == "width"),
                             edges=15, title="wine"),
        F.confidence_figure(one["confidence_histogram"], edges=15, title="wine", auroc=auroc),
        F.correctness_figure(one["confidence_histogram"], edges=15, title="wine", auroc=auroc),
        F.risk_coverage_figure(with_stage(one["risk_coverage"]), title="wine"),
        F.degradation_figure(one["calibration"], title="wine"),
        F.consistency_figure(one["consistency"], title="wine"),
        F.scorecard_figure(tables["scorecard"].filter(pl.col("dataset") == "wine")),
    ]  # fmt: skip
    for fig in figures:
        assert fig.get_figwidth() >= F.MIN_WIDTH
        _legend_fits_and_is_clear(fig)
    rel = figures[0]
    assert rel.axes[0].get_window_extent().width / rel.dpi >= 1.45 * 1.3  # panels grew


def test_grids_with_limits_set_once_are_the_grids_with_limits_set_as_each_line_is_added(
    tables, monkeypatch
):
    # a degradation figure is autoscaled once, after its lines and bands (_autoscaled_at_end);
    # a reliability figure sets the unit view on its first panel, which every panel shares
    # (_unit_square): the same limits and the same SVG as setting them panel by panel
    cal = _one_dataset(tables["calibration"]).with_columns(
        **{
            f"{metric}_{end}": pl.col(metric) + step
            for metric in ("accuracy", "mean_confidence", "ece", "gap")
            for end, step in (("lo", -0.02), ("hi", 0.03))
        }
    )
    bins = _one_dataset(tables["reliability"].filter(pl.col("binning") == "width"))

    def drawn():
        figures = [
            F.degradation_figure(cal),
            F.reliability_figure(bins, edges=15, title="wine"),
        ]
        limits = [[(ax.get_xlim(), ax.get_ylim()) for ax in fig.axes] for fig in figures]
        bands = sum(len(ax.collections) for ax in figures[0].axes)
        svgs = [F.figure_svg(fig, id_prefix="f") for fig in figures]
        return limits, bands, svgs

    limits, bands, svgs = drawn()
    assert bands == 4 * cal.select("model", "corruption").n_unique()  # one band per line
    ece = cal.get_column("ece_hi").max()
    ece_panels = [ax for ax in F.degradation_figure(cal).axes if ax.get_ylabel() == "ECE"]
    assert ece_panels and all(ax.get_ylim()[1] > ece for ax in ece_panels)
    assert {lim for fig in limits[1:] for lim in fig} == {(F._UNIT_VIEW, F._UNIT_VIEW)}

    monkeypatch.setattr(F, "_autoscaled_at_end", lambda axes: contextlib.nullcontext())
    unit_square = F._unit_square
    monkeypatch.setattr(F, "_unit_square", lambda ax, view=True: unit_square(ax))
    assert drawn() == (limits, bands, svgs)


def test_six_corruptions_stay_within_a_1400_pixel_page(tables):
    rel = _one_dataset(tables["reliability"].filter(pl.col("binning") == "width"))
    copies = rel.filter(
        (pl.col("stage") == "worst") & pl.col("corruption").is_in(["mcar", "label_noise"])
    ).with_columns(corruption=pl.col("corruption") + "_b")
    fig = F.reliability_figure(pl.concat([rel, copies]), edges=15, title="wine")
    assert len({ax.get_title() for ax in fig.axes} - {""}) == 1 + 6  # clean + 4 + 2 worst columns
    assert fig.get_figwidth() * 96 <= 1400 - 2 * 40  # CSS pixels, page margins
    _legend_fits_and_is_clear(fig)


def test_svg_is_light_deterministic_and_keeps_text(tables):
    bins = _one_dataset(tables["reliability"].filter(pl.col("binning") == "width"))
    svgs = [
        F.figure_svg(F.reliability_figure(bins, edges=15, title="wine"), id_prefix="r")
        for _ in range(2)
    ]
    assert svgs[0] == svgs[1]
    svg = svgs[0]
    assert re.search(r"<text[^>]*>ECE \d\.\d{3} · MCE", svg)  # text stays text
    attributes = " ".join(re.findall(r"<[^>]+>", svg))
    assert not re.search(r"\d\.\d{3}", attributes)  # no needless precision in the drawing
    assert svg.count("font-family") == 1 and "\n" not in svg
    ids = set(re.findall(r'id="([^"]+)"', svg))
    used = set(re.findall(r"(?:href=\"#|url\(#)([\w-]+)", svg))
    assert ids == used  # every id is used, every use defined


def test_a_long_legend_wraps_and_the_figure_grows_instead_of_clipping():
    models = [f"gradient_boosting_variant_{i}" for i in range(8)]
    cal = pl.DataFrame(
        {
            "study": "s", "dataset": "d", "corruption": "mcar",
            "model": [m for m in models for _ in range(3)],
            "severity": [0.0, 0.5, 1.0] * len(models),
            "accuracy": 0.9, "mean_confidence": 0.95, "ece": 0.05, "gap": 0.05,
        }
    )  # fmt: skip
    fig = F.degradation_figure(cal)
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == models
    assert legend._ncols < len(models)  # wrapped onto several rows
    _legend_fits_and_is_clear(fig)
    # The panels kept their size: the extra rows went below them.
    height = fig.axes[0].get_window_extent().height / fig.dpi
    assert height == pytest.approx(1.3 * F.MAX_GROWTH, rel=1e-6)


def test_dense_axes_become_one_image_while_text_stays_text():
    fig, axes = F._figure(1, 1, panel=(3, 2))
    x = np.linspace(0, 1, F.DENSE_POINTS + 1)
    axes[0, 0].plot(x, x**2)
    axes[0, 0].set_xlabel("coverage")
    svg = F.figure_svg(fig, id_prefix="d")
    assert svg.count("<image") == 1 and ">coverage</text>" in svg
    sparse, axes = F._figure(1, 1, panel=(3, 2))
    axes[0, 0].plot(x[:100], x[:100])
    assert "<image" not in F.figure_svg(sparse, id_prefix="s")


def test_the_report_page_carries_the_new_figure_content(tables):
    from relcol.report import render_html

    meta = {"study": "tiny", "spec": "", "run_id": "r", "versions": {}, "bins": 15}
    html = render_html(tables, meta=meta)

    def svg(label: str) -> str:
        start = html.index(f'aria-label="{label}"')
        return html[start : html.index("</svg>", start)]

    reliability = svg("Reliability diagrams for wine")
    # a panel per model × (clean and the 2 corruptions with the largest gap), each with both
    assert len(re.findall(r"ECE \d\.\d{3} · MCE \d\.\d{3}", reliability)) == 3 * 3
    assert "bin of &lt; 10 samples" in reliability
    assert "oracle (errors rejected first)" in svg("Risk–coverage curves for wine")
    violins = svg("Confidence distributions for wine")
    assert "wrong predictions (right)" in violins and "median bin" in violins
