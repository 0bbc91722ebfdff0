-- multilabel_bins: the label × confidence-bin grid of multi-label calibration, in both modes
--   (docs/multilabel.md): the data of the report's heatmap of accuracy − confidence.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × mode × target ×
--   non-empty equal-width bin.
-- Columns: the cell key, mode, target, bin (BIGINT), bin_lower, bin_upper, n (BIGINT),
--   sum_confidence, sum_outcome, mean_confidence, accuracy (mean outcome: the observed rate
--   of the target), accuracy_minus_confidence (DOUBLE).
-- Inputs: view multilabel_pairs; macro bin_index.
-- Parameters: variable relcol_bins (M, set by relcol; default 15).
-- The Polars twin is relcol.analysis.multilabel_bins.
CREATE OR REPLACE VIEW multilabel_bins AS
WITH summed AS (
    SELECT
        study, dataset, model, corruption, severity, label, mode, target,
        bin_index(confidence, getvariable('relcol_bins')) AS bin,
        count(*) AS n,
        sum(confidence) AS sum_confidence,
        sum(outcome) AS sum_outcome
    FROM multilabel_pairs
    GROUP BY ALL
)
SELECT
    study, dataset, model, corruption, severity, label, mode, target, bin,
    CAST(bin AS DOUBLE) / getvariable('relcol_bins') AS bin_lower,
    CAST(bin + 1 AS DOUBLE) / getvariable('relcol_bins') AS bin_upper,
    n, sum_confidence, sum_outcome,
    sum_confidence / n AS mean_confidence,
    sum_outcome / n AS accuracy,
    sum_outcome / n - sum_confidence / n AS accuracy_minus_confidence
FROM summed
ORDER BY study, dataset, model, corruption, severity, label, mode, target, bin;
