"""Benchmark: samplewise consistency (docs/consistency.md) on a large simulated long table.

    python tests/benchmarks/bench_consistency.py --rows 10000000 --replicates 25

Writes a simulated consistency study (``relcol.study._simulate``: 4 class distributions × 4
conditions × 6 error rates, τ runs each on the ``seed`` axis) of about ``--rows`` rows to a
Parquet file, then times, each the best of ``--repeats`` runs:

- Polars: ``relcol.metrics.consistency(pl.scan_parquet(...)).collect()``, the whole table
  from the file (counts, Gram/contingency statistics, every metric, both axes);
- SQL: ``SELECT * FROM consistency`` on a relcol DuckDB connection over the same file;
- brute force: numpy over every replicate pair, from the definitions (the loop
  ``tests/test_consistency.py`` uses as its reference, minus scikit-learn and scipy), on
  ``--brute-strata`` strata, extrapolated linearly in pairs × samples to the whole table (the
  layout step, building each stratum's τ × n matrices, is timed on the whole table).

and checks that both engines agree to 1e-9 (and with the brute force on the strata it ran).
Not collected by pytest (the file name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from relcol.metrics import consistency
from relcol.store import CELL, PREDICTIONS, _schema, connect
from relcol.study._simulate import ConsistencySimulation, simulate_consistency


def make_table(rows: int, replicates: int, folder: Path) -> tuple[Path, int]:
    sim = ConsistencySimulation(samples=1, replicates=replicates)
    per_sample = len(sim.families) * len(sim.conditions) * len(sim.error_rates) * replicates
    samples = max(1, round(rows / per_sample))
    frame = simulate_consistency(sim._replace(samples=samples)).with_columns(run_id=pl.lit("bench"))
    path = folder / "predictions.parquet"
    _schema.conform(frame, PREDICTIONS).write_parquet(path)
    return path, frame.height


def sql_connection(path: Path, folder: Path):
    sources = {"predictions": [str(path)]}
    side = {
        "classes": _schema.CLASSES,
        "corruptions": _schema.CORRUPTIONS,
        "runs": _schema.RUNS,
        "annotations": getattr(_schema, "ANNOTATIONS", None),
        "report_calibration": {k: PREDICTIONS[k] for k in CELL},
    }
    for name, schema in side.items():
        if schema is None:
            continue
        file = folder / f"{name}.parquet"
        _schema.empty(schema).write_parquet(file)
        sources[name] = [str(file)]
    return connect(sources)


def best_of(repeats: int, run) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return min(times), out


# Brute force: every pair, from the definitions -------------------------------------------------


def strata_matrices(path: Path):
    """Yield (cell, axis, τ × n prediction and error matrices) of every stratum with τ >= 2.

    One read; per axis, the strata are numbered, the rows sorted by (stratum, replicate,
    sample) as integers, and each stratum's block reshaped to its matrices.
    """
    frame = pl.read_parquet(
        path, columns=[*CELL, "seed", "repeat", "sample_id", "y_pred", "correct"]
    )
    axes = {"repeat": ("seed", "repeat"), "seed": ("repeat", "seed")}
    for axis, (stratum, replicate) in axes.items():
        within = [*CELL, stratum]
        strata = (
            frame.group_by(within)
            .agg(pl.col(replicate).n_unique().alias("tau"), pl.len().alias("rows"))
            .filter(pl.col("tau") >= 2)
            .sort(within, nulls_last=True)
            .with_row_index("sid")
        )
        if strata.is_empty():
            continue
        rows = (
            frame.join(strata.select(*within, "sid"), on=within, nulls_equal=True)
            .select("sid", replicate, "sample_id", "y_pred", "correct")
            .sort("sid", replicate, "sample_id")
        )
        y, wrong = rows["y_pred"].to_numpy(), ~rows["correct"].to_numpy()
        start = 0
        for row in strata.iter_rows(named=True):
            tau, n = row["tau"], row["rows"] // row["tau"]
            stop = start + row["rows"]
            key = tuple(row[k] for k in within)
            yield key, axis, y[start:stop].reshape(tau, n), wrong[start:stop].reshape(tau, n)
            start = stop


def brute_force_stratum(Y: np.ndarray, E: np.ndarray) -> dict[str, float]:
    tau, n = Y.shape
    K = int(Y.max()) + 1
    values: dict[str, list] = {
        m: []
        for m in ("ec_l", "ec_g", "ec_acc", "ec_corr", "pa", "pa_kappa", "pa_v", "kappa_error")
    }
    for i, j in itertools.combinations(range(tau), 2):
        e_i, e_j, y_i, y_j = E[i], E[j], Y[i], Y[j]
        both, either = np.sum(e_i & e_j), np.sum(e_i | e_j)
        values["ec_l"].append(1.0 if either == 0 else both / either)
        values["ec_g"].append(both / n)
        c_obs = np.mean(e_i == e_j)
        values["ec_acc"].append(c_obs)
        a_i, a_j = 1 - e_i.mean(), 1 - e_j.mean()
        c_exp = a_i * a_j + (1 - a_i) * (1 - a_j)
        values["kappa_error"].append(1.0 if c_obs == 1 else (c_obs - c_exp) / (1 - c_exp))
        s_i, s_j = e_i.std(), e_j.std()
        values["ec_corr"].append(
            None
            if s_i == 0 or s_j == 0
            else np.mean((e_i - e_i.mean()) * (e_j - e_j.mean())) / (s_i * s_j)
        )
        table = np.bincount(y_i * K + y_j, minlength=K * K).reshape(K, K)
        rows, cols = table.sum(axis=1), table.sum(axis=0)
        p_o = np.trace(table) / n
        values["pa"].append(p_o)
        identical = p_o == 1
        p_e = rows @ cols / n**2
        values["pa_kappa"].append(1.0 if identical else (p_o - p_e) / (1 - p_e))
        r, c = rows > 0, cols > 0
        dof = min(r.sum(), c.sum()) - 1
        phi2 = np.sum(table[np.ix_(r, c)] ** 2 / np.outer(rows[r], cols[c])) - 1
        values["pa_v"].append(
            1.0 if identical else None if dof < 1 else math.sqrt(max(phi2, 0) / dof)
        )
    out = {}
    for m, v in values.items():
        kept = [x for x in v if x is not None]
        out[m] = float(np.mean(kept)) if kept else None
    k = E.sum(axis=0)
    out["consistently_correct"] = float(np.mean(k == 0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--replicates", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=2, help="timing runs; the best is shown")
    parser.add_argument(
        "--brute-strata", type=int, default=12, help="strata the brute force runs on"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        path, rows = make_table(args.rows, args.replicates, folder)
        print(
            f"table: {rows:,} rows, tau = {args.replicates}, written in "
            f"{time.perf_counter() - start:.1f} s ({os.cpu_count()} cores)"
        )

        polars_s, polars = best_of(
            args.repeats, lambda: consistency(pl.scan_parquet(path)).collect()
        )
        con = sql_connection(path, folder)
        sql_s, sql = best_of(args.repeats, lambda: con.sql("SELECT * FROM consistency").pl())
        diff = max(
            (polars[c] - sql[c]).abs().max() or 0.0
            for c in polars.columns
            if polars.schema[c].is_float()
        )
        pairs = int(polars["pairs"].sum())
        samples_x_pairs = int((polars["pairs"] * polars["n"]).sum())

        # Brute force: the layout over the whole table, the pairs on a subset, extrapolated.
        start = time.perf_counter()
        strata = list(strata_matrices(path))
        layout_s = time.perf_counter() - start
        subset = strata[: args.brute_strata]
        start = time.perf_counter()
        brute = {(key, axis): brute_force_stratum(Y, E) for key, axis, Y, E in subset}
        pair_s = time.perf_counter() - start
        done = sum(math.comb(Y.shape[0], 2) * Y.shape[1] for _, _, Y, _ in subset)
        brute_s = layout_s + pair_s * samples_x_pairs / done

        # the brute force agrees with the closed forms where it ran (one stratum per cell here)
        worst = 0.0
        for (key, axis), values in brute.items():
            row = polars.filter(
                pl.all_horizontal(
                    pl.col(c).eq_missing(v) for c, v in zip(CELL, key[:-1], strict=True)
                ),
                pl.col("axis") == axis,
            ).row(0, named=True)
            if row["strata"] == 1:
                worst = max(worst, *(abs(row[m] - v) for m, v in values.items() if v is not None))

        print(
            f"cells x axes: {polars.height:,}, replicate pairs: {pairs:,}, pairs x samples: {samples_x_pairs:,}"
        )
        print(f"polars  {polars_s:7.2f} s")
        print(f"sql     {sql_s:7.2f} s   (max |polars - sql| = {diff:.1e})")
        print(
            f"brute   {brute_s:7.2f} s   (numpy over pairs: layout {layout_s:.2f} s on the whole table, "
            f"pairs {pair_s:.2f} s on {len(subset)} of {len(strata)} strata, extrapolated x{samples_x_pairs / done:.1f}; "
            f"max |brute - polars| = {worst:.1e})"
        )
        print(
            f"ratio   brute / polars = {brute_s / polars_s:.1f}, brute / sql = {brute_s / sql_s:.1f}"
        )
        con.close()


if __name__ == "__main__":
    sys.exit(main())
