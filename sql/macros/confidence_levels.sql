-- confidence_levels(source, score): the sufficient statistics of the rank metrics
--   (docs/metrics.md): counts per distinct score level, and counts from the top.
-- Grain: one row per cell id (cell_ids) × distinct score level, plus one row with a NULL
--   threshold counting the cell's rows without a score (score := 'margin' or 'entropy' on rows
--   with no proba), if any. Unordered.
-- Columns: cell (the id; join cell_ids(source) for the keys), threshold (the level t, DOUBLE),
--   n (rows at t), n_correct (right rows at t), accepted (rows with a score >= t),
--   accepted_correct (right rows among them),
--   n_cell and n_correct_cell (rows with a score in the cell, right rows among them),
--   n_missing (rows of the cell without a score). accepted and accepted_correct are NULL on the
--   NULL-threshold row. Rows with equal scores enter together, so nothing depends on row order.
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macro score_levels.
-- Parameters: score ('confidence', 'margin' or 'entropy', default 'confidence'), as in
--   score_levels.
-- The Polars twin is relcol.metrics._levels.levels (over rows sorted once per cell).
CREATE OR REPLACE MACRO confidence_levels(source := 'predictions', score := 'confidence') AS TABLE
-- one sort of the levels (not the rows: rows with equal scores need no order) per cell, highest
-- score first (the level without a score last); the running sums of that window count the rows
-- from the top. DOUBLE running sums are exact for counts below 2^53 and much faster than
-- HUGEINT ones.
SELECT
    cell,
    score_value AS threshold,
    n,
    CAST(n_correct AS BIGINT) AS n_correct,
    CASE WHEN score_value IS NOT NULL THEN CAST(sum(CAST(n AS DOUBLE)) OVER above AS BIGINT) END
        AS accepted,
    CASE WHEN score_value IS NOT NULL THEN CAST(sum(n_correct) OVER above AS BIGINT) END
        AS accepted_correct,
    CAST(sum(CASE WHEN score_value IS NULL THEN 0.0 ELSE n END) OVER whole AS BIGINT) AS n_cell,
    CAST(sum(CASE WHEN score_value IS NULL THEN 0.0 ELSE n_correct END) OVER whole AS BIGINT)
        AS n_correct_cell,
    CAST(sum(CASE WHEN score_value IS NULL THEN 1.0 * n ELSE 0.0 END) OVER whole AS BIGINT)
        AS n_missing
FROM score_levels(source, score := score)
WINDOW
    above AS (
        PARTITION BY cell
        ORDER BY score_value DESC NULLS LAST
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ),
    whole AS (PARTITION BY cell);
