-- selective(source, score, coverage, risk): selective-prediction summaries (docs/metrics.md).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label). Ordered by
--   cell, nulls last.
-- Columns: the cell key, score (the parameter), n (BIGINT: all rows), and (DOUBLE), over the
--   curve points t of selective_curve with n_t rows at t:
--   aurc = Σₜ n_t·risk(t) / n: the mean selective risk over the rows, each row at the
--     coverage at which it enters, a tied group contributing its risk × its size;
--   aurc_optimal = (n₀ − n₁(H(n) − H(n₁)))/n, the AURC of a perfect ranking (every right row
--     first, one row at a time); e_aurc = aurc − aurc_optimal;
--   risk_at_coverage = the risk of the point with the smallest coverage >= target_coverage
--     (a step curve, no interpolation);
--   coverage_at_risk = the largest coverage among points with wrong <= target_risk·accepted,
--     0 when there is none (step curve, no interpolation);
--   target_coverage, target_risk = the parameters. NULL metrics for a cell with rows that have
--   no score.
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros confidence_levels, cell_ids, harmonic.
-- Parameters: score ('confidence', 'margin' or 'entropy', default 'confidence'), coverage
--   (κ in (0, 1], default 0.8), risk (ρ in [0, 1], default 0.05), named:
--   selective(coverage := 0.9, risk := 0.02).
-- The Polars twin is relcol.metrics.selective; the view selective calls this.
CREATE OR REPLACE MACRO selective(source := 'predictions', score := 'confidence', coverage := 0.8, risk := 0.05) AS TABLE
WITH checked AS (
    SELECT
        *,
        accepted - accepted_correct AS wrong_accepted
    FROM confidence_levels(source, score := score)
    WHERE CASE
        WHEN NOT (CAST(coverage AS DOUBLE) > 0 AND CAST(coverage AS DOUBLE) <= 1) THEN
            error('coverage must be a number in (0, 1]. Got '
                  || coalesce(CAST(coverage AS VARCHAR), 'NULL') || '.')
        WHEN NOT (CAST(risk AS DOUBLE) >= 0 AND CAST(risk AS DOUBLE) <= 1) THEN
            error('risk must be a number in [0, 1]. Got '
                  || coalesce(CAST(risk AS VARCHAR), 'NULL') || '.')
        ELSE true
    END
),
cells AS (
    SELECT
        cell,
        sum(n) AS n,  -- every row, with a score or not
        any_value(n_missing) AS n_missing,
        sum(n * (wrong_accepted / accepted)) / any_value(n_cell) AS aurc,
        any_value(n_cell) AS n_cell,
        any_value(n_correct_cell) AS n_correct_cell,
        arg_min(wrong_accepted / accepted, accepted)
            FILTER (WHERE accepted >= CAST(coverage AS DOUBLE) * n_cell) AS risk_at_coverage,
        max(accepted / n_cell)
            FILTER (WHERE wrong_accepted <= CAST(risk AS DOUBLE) * accepted) AS coverage_at_risk
    FROM checked
    GROUP BY cell
),
summary AS (
    SELECT
        *,
        ((n_cell - n_correct_cell) - n_correct_cell * (harmonic(n_cell) - harmonic(n_correct_cell)))
            / n_cell AS aurc_optimal
    FROM cells
)
SELECT
    k.study, k.dataset, k.model, k.corruption, k.severity, k.label,
    score AS score,
    CAST(n AS BIGINT) AS n,
    CASE WHEN n_missing = 0 THEN aurc END AS aurc,
    CASE WHEN n_missing = 0 THEN aurc_optimal END AS aurc_optimal,
    CASE WHEN n_missing = 0 THEN aurc - aurc_optimal END AS e_aurc,
    CASE WHEN n_missing = 0 THEN risk_at_coverage END AS risk_at_coverage,
    CASE WHEN n_missing = 0 THEN coalesce(coverage_at_risk, 0.0) END AS coverage_at_risk,
    CAST(coverage AS DOUBLE) AS target_coverage,
    CAST(risk AS DOUBLE) AS target_risk
FROM summary AS s
JOIN cell_ids(source) AS k ON s.cell = k.cell
ORDER BY s.cell;
