-- selective_curve(source, score): the risk–coverage curve (docs/metrics.md). Rows are accepted
--   from the highest score down; rows with equal scores enter together, one point per level.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct score
--   level; a cell with rows that have no score has no curve. Ordered by cell, then threshold
--   from the highest down.
-- Columns: the cell key, score (the parameter), threshold (the level t: rows with a score >= t
--   are accepted), n (rows at t), accepted (rows with a score >= t) (BIGINT),
--   coverage = accepted / n_cell, risk = wrong rows among the accepted / accepted (DOUBLE).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros confidence_levels, cell_ids.
-- Parameters: score ('confidence', 'margin' or 'entropy', default 'confidence').
-- The Polars twin is relcol.metrics.selective_curve; the view selective_curve calls this.
CREATE OR REPLACE MACRO selective_curve(source := 'predictions', score := 'confidence') AS TABLE
SELECT
    k.study, k.dataset, k.model, k.corruption, k.severity, k.label,
    score AS score,
    l.threshold,
    l.n,
    l.accepted,
    l.accepted / l.n_cell AS coverage,
    (l.accepted - l.accepted_correct) / l.accepted AS risk
FROM confidence_levels(source, score := score) AS l
JOIN cell_ids(source) AS k ON l.cell = k.cell
WHERE l.n_missing = 0
ORDER BY l.cell, l.threshold DESC;
