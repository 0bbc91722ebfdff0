-- soft_agreement: confidence against the annotators' agreement on single-label rows.
-- Grain: one row per (study, dataset, model, corruption, severity, label) cell of single-label
--   rows that have an agreement (label is NULL on every row).
-- Columns: the cell key, n (BIGINT, rows with an agreement), mean_agreement, mean_confidence,
--   gap = mean_confidence − mean_agreement, ece and mce with the agreement a in place of the
--   accuracy (equal-width bins as in calibration), brier_top = mean (c − a)², nll_top =
--   −mean [a·log c̃ + (1 − a)·log(1 − c̃)], c̃ clipped to [1e−15, 1 − 1e−15], pearson_r and
--   spearman_rho (mid-ranks) of c with a (NULL when either is constant), accuracy (the share of
--   correct rows).
-- Inputs: views predictions, annotations; macros bin_index, ece_from_bins.
-- Parameters: variable relcol_bins (M, set by relcol; default 15).
-- The Polars twin is relcol.analysis._agreement.soft_agreement.
CREATE OR REPLACE VIEW soft_agreement AS
WITH soft AS (
    SELECT
        p.study, p.dataset, p.model, p.corruption, p.severity, p.label,
        p.confidence, a.agreement, CAST(p.correct AS DOUBLE) AS correct
    FROM predictions AS p
    JOIN annotations AS a
        ON p.study = a.study AND p.dataset = a.dataset AND p.model = a.model
        AND p.corruption = a.corruption AND p.severity = a.severity AND p.seed = a.seed
        AND p."repeat" = a."repeat" AND p.sample_id = a.sample_id
        AND p.label IS NOT DISTINCT FROM a.label
    WHERE p.label IS NULL AND a.agreement IS NOT NULL
),
ranked AS (
    SELECT
        *,
        rank() OVER (PARTITION BY study, dataset, model, corruption, severity ORDER BY confidence)
            + (count(*) OVER (PARTITION BY study, dataset, model, corruption, severity, confidence) - 1) / 2.0
            AS rank_c,
        rank() OVER (PARTITION BY study, dataset, model, corruption, severity ORDER BY agreement)
            + (count(*) OVER (PARTITION BY study, dataset, model, corruption, severity, agreement) - 1) / 2.0
            AS rank_a
    FROM soft
),
binned AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        bin_index(confidence, getvariable('relcol_bins')) AS bin,
        count(*) AS n, sum(confidence) AS sum_c, sum(agreement) AS sum_o,
        sum((confidence - agreement) * (confidence - agreement)) AS sum_se,
        sum(-(agreement * ln(greatest(least(confidence, 1 - 1e-15), 1e-15))
              + (1 - agreement) * ln(1 - greatest(least(confidence, 1 - 1e-15), 1e-15)))) AS sum_ll
    FROM soft
    GROUP BY ALL
),
scores AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        CAST(sum(n) AS BIGINT) AS n,
        sum(sum_o) / sum(n) AS mean_agreement,
        sum(sum_c) / sum(n) AS mean_confidence,
        ece_from_bins(n, sum_c, sum_o) AS ece,
        max(abs(sum_o - sum_c) / n) AS mce,
        sum(sum_se) / sum(n) AS brier_top,
        sum(sum_ll) / sum(n) AS nll_top
    FROM binned
    GROUP BY ALL
),
correlations AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        corr(confidence, agreement) AS pearson_r,
        corr(rank_c, rank_a) AS spearman_rho,
        avg(correct) AS accuracy
    FROM ranked
    GROUP BY ALL
)
SELECT
    s.study, s.dataset, s.model, s.corruption, s.severity, s.label,
    s.n, s.mean_agreement, s.mean_confidence,
    s.mean_confidence - s.mean_agreement AS gap,
    s.ece, s.mce, s.brier_top, s.nll_top,
    CASE WHEN isnan(c.pearson_r) THEN NULL ELSE c.pearson_r END AS pearson_r,
    CASE WHEN isnan(c.spearman_rho) THEN NULL ELSE c.spearman_rho END AS spearman_rho,
    c.accuracy
FROM scores AS s
JOIN correlations AS c
    ON s.study = c.study AND s.dataset = c.dataset AND s.model = c.model
    AND s.corruption = c.corruption AND s.severity = c.severity
ORDER BY s.study, s.dataset, s.model, s.corruption, s.severity;
