-- monitoring: per-period calibration of predictions collected over periods (weeks, days …),
--   each against its stream's first period (`relcol monitor` adds the tests and alerts).
-- Grain: one row per stream (study, dataset, model, corruption, severity, label) × period, for
--   the rows whose ingested file had a period column (annotations.period).
-- Columns: the stream keys, period (text), period_index (0-based position of the period among
--   the study's periods: plain decimal numbers in numeric order, then the others in text
--   order; ties between equal numbers by text), baseline (the
--   stream's first period), n (BIGINT), accuracy, mean_confidence, gap = mean_confidence −
--   accuracy, ece = Σₘ |Σz − Σc| / n and mce = maxₘ |Σz − Σc| / nₘ on equal-width bins,
--   brier_top = (1/n) Σ (c − z)², ece_change and mce_change (the period's value minus the
--   baseline's; 0 on the baseline).
-- The point estimates only: the per-period intervals and the alerts' permutation tests come
--   from `relcol monitor` (relcol.analysis._monitoring), which gives the same point values.
-- Inputs: views predictions, annotations; macros bin_index, ece_from_bins.
-- Parameters: variable relcol_bins (M, set by relcol; default 15).
CREATE OR REPLACE VIEW monitoring AS
WITH rows AS (
    SELECT
        p.study, p.dataset, p.model, p.corruption, p.severity, p.label, a.period,
        CAST(p.confidence AS DOUBLE) AS c,
        CAST(p.correct AS DOUBLE) AS z
    FROM predictions AS p
    JOIN annotations AS a
        ON  a.study = p.study AND a.dataset = p.dataset AND a.model = p.model
        AND a.corruption = p.corruption AND a.severity = p.severity AND a.seed = p.seed
        AND a."repeat" = p."repeat" AND a.sample_id = p.sample_id
        AND a.label IS NOT DISTINCT FROM p.label
    WHERE a.period IS NOT NULL
),
binned AS (
    SELECT
        study, dataset, model, corruption, severity, label, period,
        count(*) AS n,
        sum(c) AS sum_confidence,
        sum(z) AS sum_correct,
        sum((c - z) * (c - z)) AS sum_brier
    FROM rows
    GROUP BY
        study, dataset, model, corruption, severity, label, period,
        bin_index(c, getvariable('relcol_bins'))
),
periods AS (
    SELECT
        study, dataset, model, corruption, severity, label, period,
        CAST(sum(n) AS BIGINT) AS n,
        sum(sum_correct) / sum(n) AS accuracy,
        sum(sum_confidence) / sum(n) AS mean_confidence,
        ece_from_bins(n, sum_confidence, sum_correct) AS ece,
        max(abs(sum_correct - sum_confidence) / n) AS mce,
        sum(sum_brier) / sum(n) AS brier_top
    FROM binned
    GROUP BY study, dataset, model, corruption, severity, label, period
),
numbered AS (
    -- a period is a number in plain decimal notation (as relcol.analysis._monitoring.NUMBER)
    SELECT
        *,
        regexp_full_match(period, '[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?')
            AS number
    FROM periods
),
ordered AS (
    SELECT
        *,
        CAST(dense_rank() OVER (
            PARTITION BY study
            ORDER BY
                CASE WHEN number THEN 0 ELSE 1 END,
                CASE WHEN number THEN CAST(period AS DOUBLE) END,
                period
        ) - 1 AS INTEGER) AS period_index
    FROM numbered
)
SELECT
    study, dataset, model, corruption, severity, label, period, period_index,
    first_value(period) OVER stream AS baseline,
    n, accuracy, mean_confidence, mean_confidence - accuracy AS gap, ece, mce, brier_top,
    ece - first_value(ece) OVER stream AS ece_change,
    mce - first_value(mce) OVER stream AS mce_change
FROM ordered
WINDOW stream AS (
    PARTITION BY study, dataset, model, corruption, severity, label ORDER BY period_index
)
ORDER BY study, dataset, model, corruption, severity, label NULLS LAST, period_index;
