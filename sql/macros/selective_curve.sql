-- selective_curve(source, score): the risk–coverage curve (docs/metrics.md). Rows are accepted
--   from the highest score down; rows with equal scores enter together, one point per level.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct score
--   level; a cell with rows that have no score has no curve. Ordered by cell, then threshold
--   from the highest down.
-- Columns: the cell key, score (the parameter), threshold (the level t: rows with a score >= t
--   are accepted), n (rows at t), accepted (rows with a score >= t) (BIGINT),
--   coverage = accepted / n_cell, risk = wrong rows among the accepted / accepted (DOUBLE).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macro selective_curve_counts.
-- Parameters: score ('confidence', 'margin' or 'entropy', default 'confidence'), as in
--   score_levels.
-- How: the counts of selective_curve_counts, in its order (a projection keeps it):
--   coverage = accepted / n_cell and risk = (accepted - accepted_correct) / accepted, in DOUBLE
--   (the view selective_curve divides its stored counts the same way).
-- The Polars twin is relcol.metrics.selective_curve.
CREATE OR REPLACE MACRO selective_curve(source := 'predictions', score := 'confidence') AS TABLE
SELECT
    study, dataset, model, corruption, severity, label,
    score AS score,
    threshold,
    n,
    accepted,
    accepted / n_cell AS coverage,
    (accepted - accepted_correct) / accepted AS risk
FROM selective_curve_counts(source, score := score);
