-- calibration_bins(source, bins): per-bin sufficient statistics for calibration (METRICS.md §2,
--   DESIGN.md §7): every calibration number is a function of n, Σc and Σz per cell × bin.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × non-empty bin;
--   a null label (single-label rows) is one cell. Ordered by cell and bin, nulls last.
-- Columns: the cell key, bin (0-based BIGINT), bin_lower = bin/M, bin_upper = (bin+1)/M,
--   n (BIGINT), sum_confidence, sum_correct, mean_confidence, accuracy (DOUBLE).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macro bin_index.
-- Parameters: bins (M, an integer >= 1, default 15), named: calibration_bins(bins := 10).
-- The Polars twin is relcol.metrics.calibration_bins; the view calibration_bins calls this at
-- the connection's bins.
CREATE OR REPLACE MACRO calibration_bins(source := 'predictions', bins := 15) AS TABLE
WITH binned AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        bin_index(CAST(confidence AS DOUBLE), bins) AS bin,
        CAST(confidence AS DOUBLE) AS confidence,
        CAST(correct AS DOUBLE) AS correct
    FROM query_table(source)
),
summed AS (
    SELECT
        study, dataset, model, corruption, severity, label, bin,
        count(*) AS n,
        sum(confidence) AS sum_confidence,
        sum(correct) AS sum_correct
    FROM binned
    GROUP BY study, dataset, model, corruption, severity, label, bin
)
SELECT
    study, dataset, model, corruption, severity, label, bin,
    CAST(bin AS DOUBLE) / bins AS bin_lower,
    CAST(bin + 1 AS DOUBLE) / bins AS bin_upper,
    n,
    sum_confidence,
    sum_correct,
    sum_confidence / n AS mean_confidence,
    sum_correct / n AS accuracy
FROM summed
ORDER BY study, dataset, model, corruption, severity, label, bin;
