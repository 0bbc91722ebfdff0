-- confidence_levels(source, score): the sufficient statistics of the rank metrics
--   (METRICS.md §4–§5): counts per distinct score level, and counts from the top.
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
)
-- one sort per cell, highest score first (rows without a score last). Every count is a frame
-- of that one window (frames that DuckDB evaluates fast: running ones, and whole-partition
-- sums without FILTER), and the first row of each level, where row_number = rank, stands for
-- it: rank − 1 rows and the running sum before it lie above the level. DOUBLE running sums are
-- exact for counts below 2^53 and much faster than HUGEINT ones.
SELECT
    cell,
    score_value AS threshold,
    count(*) OVER above - rank() OVER levels + 1 AS n,
    CAST(sum(correct) OVER above - coalesce(sum(correct) OVER before, 0) AS BIGINT) AS n_correct,
    CASE WHEN score_value IS NOT NULL THEN count(*) OVER above END AS accepted,
    CASE WHEN score_value IS NOT NULL THEN CAST(sum(correct) OVER above AS BIGINT) END
        AS accepted_correct,
    count(*) OVER whole - CAST(sum(CASE WHEN score_value IS NULL THEN 1 ELSE 0 END) OVER whole AS BIGINT)
        AS n_cell,
    CAST(sum(CASE WHEN score_value IS NULL THEN 0.0 ELSE correct END) OVER whole AS BIGINT)
        AS n_correct_cell,
    CAST(sum(CASE WHEN score_value IS NULL THEN 1 ELSE 0 END) OVER whole AS BIGINT) AS n_missing
FROM numbered
WINDOW
    levels AS (
        PARTITION BY cell
        ORDER BY score_value DESC NULLS LAST
    ),
    above AS (
        PARTITION BY cell
        ORDER BY score_value DESC NULLS LAST
        RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ),
    before AS (
        PARTITION BY cell
        ORDER BY score_value DESC NULLS LAST
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
    ),
    whole AS (
        PARTITION BY cell
        ORDER BY score_value DESC NULLS LAST
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    )
QUALIFY row_number() OVER levels = rank() OVER levels;
