-- discrimination(source, score): does the score separate right from wrong? (docs/metrics.md)
-- Grain: one row per cell (study, dataset, model, corruption, severity, label). Ordered by
--   cell, nulls last.
-- Columns: the cell key, score (the parameter), n (BIGINT: all rows), and (DOUBLE), with n₁
--   right and n₀ wrong rows and the levels t of confidence_levels:
--   auroc = (Σₜ n_correct·midrank(t) − n₁(n₁+1)/2) / (n₁n₀), midrank(t) the mean ascending rank
--     of the rows at t: P(right > wrong) + ½ P(tie); NULL unless n₁ > 0 and n₀ > 0;
--   aupr_success = Σₜ (n_correct/n₁)·(accepted_correct/accepted): average precision, positive =
--     right, accepting score >= t (scikit-learn's step definition); NULL when n₁ = 0;
--   aupr_error: the same with positive = wrong and score −c (accepting score <= t); NULL when n₀ = 0;
--   fpr_at_95tpr = the smallest (accepted − accepted_correct)/n₀ over levels with
--     20·accepted_correct >= 19·n₁ (TPR >= 0.95, tied rows entering together); NULL unless
--     n₁ > 0 and n₀ > 0;
--   cohens_d = (μ₁ − μ₀)/√((σ₁² + σ₀²)/2), σ with ddof 1, NULL unless n₁ >= 2, n₀ >= 2 and
--     σ₁² + σ₀² > 0; point_biserial = (μ₁ − μ₀)·√(n₁n₀)/(n·σ), σ the population SD of the
--     score, NULL unless n₁ > 0, n₀ > 0 and σ > 0. Moments by DuckDB's var_samp / var_pop over
--     the rows; a group whose scores are all equal has variance exactly 0.
--   Every metric is NULL for a cell with rows that have no score (NULL-threshold levels; the
--   sums over levels skip that row, whose accepted counts are NULL).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros confidence_levels, cell_ids, proba_margin, proba_entropy.
-- Parameters: score ('confidence', 'margin' or 'entropy', default 'confidence'), named:
--   discrimination(score := 'margin').
-- The Polars twin is relcol.metrics.discrimination; the view discrimination calls this.
CREATE OR REPLACE MACRO discrimination(source := 'predictions', score := 'confidence') AS TABLE
WITH levels AS (
    SELECT
        *,
        CAST(n_correct_cell AS DOUBLE) AS n1,
        CAST(n_cell - n_correct_cell AS DOUBLE) AS n0,
        CAST(n - n_correct AS DOUBLE) AS n_wrong
    FROM confidence_levels(source, score := score)
),
ranked AS (
    SELECT
        cell,
        sum(n) AS n,  -- every row, with a score or not
        any_value(n_missing) AS n_missing,
        any_value(n1) AS n1,
        any_value(n0) AS n0,
        sum(n_correct * ((n_cell - accepted) + (n + 1) / 2)) - any_value(n1) * (any_value(n1) + 1) / 2
            AS u,
        sum(n_correct / n1 * (accepted_correct / accepted)) AS ap_success,
        sum(n_wrong / n0 * (
            ((n_cell - accepted + n) - (n_correct_cell - accepted_correct + n_correct))
            / (n_cell - accepted + n))) AS ap_error,
        min((accepted - accepted_correct) / n0)
            FILTER (WHERE 20 * accepted_correct >= 19 * n_correct_cell) AS fpr
    FROM levels
    GROUP BY cell
),
scored AS (
    -- grouped by the keys (no join carrying the vectors of score := 'margin' or 'entropy')
    SELECT
        study, dataset, model, corruption, severity, label, correct,
        CASE score
            WHEN 'margin' THEN proba_margin(proba)
            WHEN 'entropy' THEN -proba_entropy(proba)
            ELSE CAST(confidence AS DOUBLE)
        END AS score_value
    FROM query_table(source)
),
moments AS (
    -- a group whose scores are all equal has variance exactly 0, whatever the algorithm
    SELECT
        study, dataset, model, corruption, severity, label,
        avg(score_value) FILTER (WHERE correct) AS mean1,
        avg(score_value) FILTER (WHERE NOT correct) AS mean0,
        CASE WHEN max(score_value) FILTER (WHERE correct) = min(score_value) FILTER (WHERE correct)
             THEN 0.0 ELSE var_samp(score_value) FILTER (WHERE correct) END AS var1,
        CASE WHEN max(score_value) FILTER (WHERE NOT correct) = min(score_value) FILTER (WHERE NOT correct)
             THEN 0.0 ELSE var_samp(score_value) FILTER (WHERE NOT correct) END AS var0,
        CASE WHEN max(score_value) = min(score_value) THEN 0.0 ELSE var_pop(score_value) END AS var_all
    FROM scored
    GROUP BY study, dataset, model, corruption, severity, label
)
SELECT
    k.study, k.dataset, k.model, k.corruption, k.severity, k.label,
    score AS score,
    CAST(r.n AS BIGINT) AS n,
    CASE WHEN r.n_missing = 0 AND r.n1 > 0 AND r.n0 > 0 THEN r.u / (r.n1 * r.n0) END AS auroc,
    CASE WHEN r.n_missing = 0 AND r.n1 > 0 THEN r.ap_success END AS aupr_success,
    CASE WHEN r.n_missing = 0 AND r.n0 > 0 THEN r.ap_error END AS aupr_error,
    CASE WHEN r.n_missing = 0 AND r.n1 > 0 AND r.n0 > 0 THEN r.fpr END AS fpr_at_95tpr,
    CASE WHEN r.n_missing = 0 AND r.n1 >= 2 AND r.n0 >= 2 AND (m.var1 + m.var0) / 2 > 0
         THEN (m.mean1 - m.mean0) / sqrt((m.var1 + m.var0) / 2) END AS cohens_d,
    CASE WHEN r.n_missing = 0 AND r.n1 > 0 AND r.n0 > 0 AND m.var_all > 0
         THEN (m.mean1 - m.mean0) * sqrt(r.n1 * r.n0) / ((r.n1 + r.n0) * sqrt(m.var_all))
    END AS point_biserial
FROM ranked AS r
JOIN cell_ids(source) AS k ON r.cell = k.cell
JOIN moments AS m
    ON k.study = m.study AND k.dataset = m.dataset AND k.model = m.model
    AND k.corruption = m.corruption AND k.severity = m.severity
    AND k.label IS NOT DISTINCT FROM m.label
ORDER BY r.cell;
