-- bin_statistics(source, bins, binning): the per-bin sufficient statistics of every cell, by cell
--   id (docs/statistics.md): every calibration number and top-label score is a function of them.
--   calibration_bins is this with the cell keys; calibration reads it directly.
-- Grain: one row per cell id (cell_ids) × non-empty bin of one binning. Unordered.
-- Binnings: 'width', bin_index(c, M): (m/M, (m+1)/M], bin_lower = m/M, bin_upper = (m+1)/M;
--   'mass': rows ordered by (confidence, sample_id, seed, repeat) within the cell, the row of
--   0-based rank r of n in bin ⌊r·M/n⌋; bin_lower and bin_upper are the smallest and largest
--   confidence in the bin.
-- Columns: cell, binning, bin (0-based BIGINT), bin_lower, bin_upper, n (BIGINT),
--   sum_confidence, sum_correct, mean_confidence, accuracy, sum_confidence_sq (Σc²),
--   sum_confidence_correct (Σc·z), sum_nll_top (Σ −[z ln c̃ + (1−z) ln(1−c̃)], c̃ clipped to
--   [1e-15, 1 − 1e-15]) (DOUBLE).
-- Inputs: source, the name of a table or view with the long table's columns; macros cell_rows,
--   bin_index.
-- Parameters: bins (M, an integer >= 1), binning ('width' or 'mass').
-- The Polars twin is relcol.metrics._statistics (width_statistics, mass_statistics).
CREATE OR REPLACE MACRO bin_statistics(source, bins, binning) AS TABLE
WITH rows_checked AS (
    SELECT
        cell,
        CAST(confidence AS DOUBLE) AS confidence,
        CAST(correct AS DOUBLE) AS correct,
        sample_id, seed, "repeat"
    FROM cell_rows(source)
    WHERE CASE
        WHEN bins >= 1 AND bins <= 1000 AND bins = floor(bins) THEN true
        ELSE error('bins must be an int in [1, 1000]. Got ' || coalesce(CAST(bins AS VARCHAR), 'NULL') || '.')
    END
),
width_binned AS (
    -- every binning but 'mass' comes here, so a misspelt one fails instead of giving no rows
    SELECT
        cell,
        CASE
            WHEN binning = 'width' THEN bin_index(confidence, bins)
            ELSE error('binning must be one of ''width'', ''mass''. Got '
                       || coalesce('''' || binning || '''', 'NULL') || '.')
        END AS bin,
        confidence, correct
    FROM rows_checked
    WHERE binning IS DISTINCT FROM 'mass'
),
mass_binned AS (
    SELECT
        cell,
        (row_number() OVER ranked - 1) * bins // count(*) OVER whole AS bin,
        confidence, correct
    FROM rows_checked
    WHERE binning = 'mass'
    WINDOW
        ranked AS (PARTITION BY cell ORDER BY confidence, sample_id, seed, "repeat"),
        whole AS (
            PARTITION BY cell ORDER BY confidence, sample_id, seed, "repeat"
            ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
        )
),
summed AS (
    SELECT
        cell, bin,
        count(*) AS n,
        sum(confidence) AS sum_confidence,
        sum(correct) AS sum_correct,
        sum(confidence * confidence) AS sum_confidence_sq,
        sum(confidence * correct) AS sum_confidence_correct,
        sum(CASE
            WHEN correct > 0 THEN -ln(least(greatest(confidence, 1e-15), 1 - 1e-15))
            ELSE -ln(1 - least(greatest(confidence, 1e-15), 1 - 1e-15))
        END) AS sum_nll_top,
        min(confidence) AS lowest,
        max(confidence) AS highest
    FROM (SELECT * FROM width_binned UNION ALL SELECT * FROM mass_binned)
    GROUP BY cell, bin
)
SELECT
    cell,
    binning AS binning,
    bin,
    CASE WHEN binning = 'width' THEN CAST(bin AS DOUBLE) / bins ELSE lowest END AS bin_lower,
    CASE WHEN binning = 'width' THEN CAST(bin + 1 AS DOUBLE) / bins ELSE highest END AS bin_upper,
    n,
    sum_confidence,
    sum_correct,
    sum_confidence / n AS mean_confidence,
    sum_correct / n AS accuracy,
    sum_confidence_sq,
    sum_confidence_correct,
    sum_nll_top
FROM summed;
