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
--   (default 'predictions'); macros cell_ids, proba_margin, proba_entropy.
-- Parameters: score, what ranks the rows: 'confidence' (default), 'margin' (p₍₁₎ − p₍₂₎) or
--   'entropy' (−entropy of proba: the lower the entropy, the higher the rank).
-- The Polars twin is relcol.metrics._levels.levels (over rows sorted once per cell).
CREATE OR REPLACE MACRO confidence_levels(source := 'predictions', score := 'confidence') AS TABLE
WITH scored AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        CASE score
            WHEN 'confidence' THEN CAST(confidence AS DOUBLE)
            WHEN 'margin' THEN proba_margin(proba)
            WHEN 'entropy' THEN -proba_entropy(proba)
            ELSE error('score must be one of ''confidence'', ''margin'', ''entropy''. Got '
                       || coalesce('''' || score || '''', 'NULL') || '.')
        END AS score_value,
        CAST(correct AS DOUBLE) AS correct
    FROM query_table(source)
),
numbered AS (
    -- the score first, then the cell id: the join carries two numbers per row, never a vector
    SELECT c.cell, s.score_value, s.correct
    FROM scored AS s
    JOIN cell_ids(source) AS c
        ON s.study = c.study AND s.dataset = c.dataset AND s.model = c.model
        AND s.corruption = c.corruption AND s.severity = c.severity
        AND s.label IS NOT DISTINCT FROM c.label
),
levels AS (
    -- one row per distinct score of a cell (one for its rows without a score): the window
    -- below sorts levels, not rows, and rows with equal scores need no order at all
    SELECT cell, score_value, count(*) AS n, sum(correct) AS n_correct
    FROM numbered
    GROUP BY cell, score_value
)
-- one sort of the levels per cell, highest score first (the level without a score last); the
-- running sums of that window count the rows from the top. DOUBLE running sums are exact for
-- counts below 2^53 and much faster than HUGEINT ones.
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
FROM levels
WINDOW
    above AS (
        PARTITION BY cell
        ORDER BY score_value DESC NULLS LAST
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ),
    whole AS (PARTITION BY cell);
