-- score_levels(source, score): each cell's rows grouped by their score (docs/metrics.md).
-- Grain: one row per cell id (cell_ids) × distinct score level, plus one row with a NULL level
--   counting the cell's rows without a score (score := 'margin' or 'entropy' on rows with no
--   proba), if any. Unordered.
-- Columns: cell (the id; join cell_ids(source) for the keys), score_value (the level, DOUBLE),
--   n (rows at the level, BIGINT), n_correct (right rows at the level, DOUBLE holding an
--   integer).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros cell_ids, proba_margin, proba_entropy.
-- Parameters: score, what ranks the rows: 'confidence' (default), 'margin' (p₍₁₎ − p₍₂₎) or
--   'entropy' (−entropy of proba: the lower the entropy, the higher the rank).
-- The levels of confidence_levels and selective_curve; rows with equal scores enter a curve
--   together, so nothing depends on the order of the rows.
CREATE OR REPLACE MACRO score_levels(source := 'predictions', score := 'confidence') AS TABLE
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
SELECT cell, score_value, count(*) AS n, sum(correct) AS n_correct
FROM numbered
GROUP BY cell, score_value;
