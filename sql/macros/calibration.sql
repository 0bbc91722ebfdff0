-- calibration(source, bins): accuracy, mean confidence, the gap Δ, ECE and MCE of every cell
--   (METRICS.md §2), derived from the per-bin sums of calibration_bins, never from the rows.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label); a null label
--   (single-label rows) is one cell. Ordered by cell, nulls last.
-- Columns: the cell key, n (BIGINT), accuracy, mean_confidence, gap = mean_confidence −
--   accuracy, abs_gap = |gap|, ece = Σₘ |Σz − Σc| / n, mce = maxₘ |Σz − Σc| / nₘ (DOUBLE).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macro calibration_bins.
-- Parameters: bins (M for ece and mce, an integer >= 1, default 15), named:
--   calibration(bins := 10).
-- The Polars twin is relcol.metrics.calibration (the *_from_bins builders, formula for
-- formula); the view calibration calls this at the connection's bins.
CREATE OR REPLACE MACRO calibration(source := 'predictions', bins := 15) AS TABLE
WITH bin_errors AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        n, sum_confidence, sum_correct,
        abs(sum_correct - sum_confidence) AS bin_error  -- nₘ·|accₘ − confₘ|
    FROM calibration_bins(source, bins := bins)
),
cells AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        CAST(sum(n) AS BIGINT) AS n,  -- sum(BIGINT) is HUGEINT in DuckDB
        sum(sum_correct) / sum(n) AS accuracy,
        sum(sum_confidence) / sum(n) AS mean_confidence,
        sum(bin_error) / sum(n) AS ece,
        max(bin_error / n) AS mce
    FROM bin_errors
    GROUP BY study, dataset, model, corruption, severity, label
)
SELECT
    study, dataset, model, corruption, severity, label,
    n, accuracy, mean_confidence,
    mean_confidence - accuracy AS gap,
    abs(mean_confidence - accuracy) AS abs_gap,
    ece, mce
FROM cells
ORDER BY study, dataset, model, corruption, severity, label;
