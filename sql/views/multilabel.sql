-- multilabel: multi-label calibration per label, micro- and macro-averaged, in both modes and
--   for both targets (docs/multilabel.md).
-- Grain: one row per (study, dataset, model, corruption, severity) × mode × target × average,
--   and per label for average = 'label'.
-- Columns: the cell key (label is NULL on micro and macro rows), mode ('prediction_confidence'
--   or 'positive_class', see multilabel_pairs), target ('binary' or 'agreement'), average
--   ('label': one label; 'micro': every (sample, label) pair pooled; 'macro': the mean over
--   labels of each per-label value, with n the total), label_name (from classes), n (BIGINT),
--   accuracy (the mean outcome), mean_confidence, gap, abs_gap, ece, mce (equal-width bins as
--   in calibration), brier_top = mean (confidence − outcome)², nll_top = −mean [o·log c̃ +
--   (1 − o)·log(1 − c̃)], c̃ clipped to [1e−15, 1 − 1e−15]. brier_top and nll_top are the same
--   in both modes (p − y = ±(c − z) row by row); ece and mce are not.
-- Inputs: views multilabel_pairs, classes; macros bin_index, ece_from_bins, mce_from_bins.
-- Parameters: variable relcol_bins (M, set by relcol; default 15).
-- The Polars twin is relcol.analysis.multilabel_calibration.
CREATE OR REPLACE VIEW multilabel AS
WITH scored AS (
    SELECT
        study, dataset, model, corruption, severity, label, mode, target,
        bin_index(confidence, getvariable('relcol_bins')) AS bin,
        confidence, outcome,
        (confidence - outcome) * (confidence - outcome) AS squared_error,
        -(outcome * ln(greatest(least(confidence, 1 - 1e-15), 1e-15))
          + (1 - outcome) * ln(1 - greatest(least(confidence, 1 - 1e-15), 1e-15))) AS log_loss
    FROM multilabel_pairs
),
-- One shape serves the label and the micro rows: the bins grouped once per label and once with
-- the labels pooled (GROUPING SETS), then one aggregation per row of either average.
bins AS (
    SELECT
        study, dataset, model, corruption, severity, label, mode, target,
        CASE WHEN grouping(label) = 1 THEN 'micro' ELSE 'label' END AS average, bin,
        count(*) AS n, sum(confidence) AS sum_c, sum(outcome) AS sum_o,
        sum(squared_error) AS sum_se, sum(log_loss) AS sum_ll
    FROM scored
    GROUP BY GROUPING SETS (
        (study, dataset, model, corruption, severity, label, mode, target, bin),
        (study, dataset, model, corruption, severity, mode, target, bin)
    )
),
per_average AS (
    SELECT
        study, dataset, model, corruption, severity, CAST(label AS INTEGER) AS label, mode,
        target, average,
        CAST(sum(n) AS BIGINT) AS n,
        sum(sum_o) / sum(n) AS accuracy,
        sum(sum_c) / sum(n) AS mean_confidence,
        ece_from_bins(n, sum_c, sum_o) AS ece,
        mce_from_bins(n, sum_c, sum_o) AS mce,
        sum(sum_se) / sum(n) AS brier_top,
        sum(sum_ll) / sum(n) AS nll_top
    FROM bins
    GROUP BY ALL
),
with_gaps AS (
    SELECT *, mean_confidence - accuracy AS gap, abs(mean_confidence - accuracy) AS abs_gap
    FROM per_average
),
macro AS (
    SELECT
        study, dataset, model, corruption, severity, CAST(NULL AS INTEGER) AS label, mode, target,
        'macro' AS average,
        CAST(sum(n) AS BIGINT) AS n,
        avg(accuracy) AS accuracy, avg(mean_confidence) AS mean_confidence,
        avg(ece) AS ece, avg(mce) AS mce, avg(brier_top) AS brier_top, avg(nll_top) AS nll_top,
        avg(gap) AS gap, avg(abs_gap) AS abs_gap
    FROM with_gaps
    WHERE average = 'label'
    GROUP BY ALL
),
everything AS (
    SELECT study, dataset, model, corruption, severity, label, mode, target, average, n,
           accuracy, mean_confidence, gap, abs_gap, ece, mce, brier_top, nll_top
    FROM with_gaps
    UNION ALL
    SELECT study, dataset, model, corruption, severity, label, mode, target, average, n,
           accuracy, mean_confidence, gap, abs_gap, ece, mce, brier_top, nll_top
    FROM macro
)
SELECT
    e.study, e.dataset, e.model, e.corruption, e.severity, e.label, e.mode, e.target, e.average,
    c.name AS label_name,
    e.n, e.accuracy, e.mean_confidence, e.gap, e.abs_gap, e.ece, e.mce, e.brier_top, e.nll_top
FROM everything AS e
LEFT JOIN classes AS c
    ON c.study = e.study AND c.dataset = e.dataset AND c.code = e.label
ORDER BY
    e.study, e.dataset, e.model, e.corruption, e.severity, e.mode, e.target,
    CASE e.average WHEN 'label' THEN 0 WHEN 'micro' THEN 1 ELSE 2 END, e.label;
