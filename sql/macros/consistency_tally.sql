-- consistency_tally(units, layout): per-sample counts over the replicates of a stratum, the
--   sufficient statistics of every closed form in docs/consistency.md.
-- Grain: one row per stratum g × sample predicted by all τ replicates of g (others are left out).
-- Columns: g, sample_id, y_clean (its smallest value over the replicates), replicates (τ),
--   wrong (kₛ, replicates wrong), distinct_classes, agreeing_pairs (Σ_c C(n_sc, 2), n_sc the
--   replicates predicting class c) (BIGINT); prediction_entropy (DOUBLE: Σ_c (n_sc/τ)·ln(τ/n_sc)
--   / ln K, 0 when K < 2); predicted (the smallest class predicted); constant (BOOLEAN: one
--   class predicted, and all replicates right or all wrong).
-- Inputs: units and layout, names of tables, views or CTEs holding consistency_units and
--   consistency_layout of the same source.
-- Parameters: none.
CREATE OR REPLACE MACRO consistency_tally(units := 'consistency_units_', layout := 'consistency_layout_') AS TABLE
WITH strata AS (
    SELECT DISTINCT g, tau, classes FROM query_table(layout)
),
per_class AS (
    SELECT
        g, sample_id, y_pred,
        count(*) AS n,
        count_if(wrong) AS wrong,
        min(y_clean) AS y_clean
    FROM query_table(units)
    GROUP BY g, sample_id, y_pred
),
per_sample AS (
    SELECT
        p.g, p.sample_id,
        min(p.y_clean) AS y_clean,
        CAST(sum(p.n) AS BIGINT) AS replicates,
        CAST(sum(p.wrong) AS BIGINT) AS wrong,
        count(*) AS distinct_classes,
        CAST(sum(p.n * (p.n - 1) // 2) AS BIGINT) AS agreeing_pairs,
        sum(p.n / s.tau * ln(s.tau / p.n)) AS entropy,
        min(p.y_pred) AS predicted,
        any_value(s.tau) AS tau,
        any_value(s.classes) AS classes
    FROM per_class AS p
    JOIN strata AS s USING (g)
    GROUP BY p.g, p.sample_id
)
SELECT
    g, sample_id, y_clean, replicates, wrong, distinct_classes, agreeing_pairs,
    CASE WHEN classes >= 2 THEN entropy / ln(classes) ELSE 0.0 END AS prediction_entropy,
    predicted,
    distinct_classes = 1 AND (wrong = 0 OR wrong = tau) AS constant
FROM per_sample
WHERE replicates = tau;
