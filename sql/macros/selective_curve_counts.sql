-- selective_curve_counts(source, score): the counts behind the risk–coverage curve (docs/metrics.md).
--   Rows are accepted from the highest score down; rows with equal scores enter together, one
--   point per level. The macro selective_curve reads coverage and risk off these counts.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct score
--   level; a cell with rows that have no score has no curve. Ordered by cell, then threshold
--   from the highest down.
-- Columns: the cell key, threshold (the level t: rows with a score >= t are accepted), n (rows
--   at t), accepted (rows with a score >= t), accepted_correct (right rows among them), n_cell
--   (the cell's rows), all counts BIGINT.
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros score_levels, cell_ids.
-- Parameters: score ('confidence', 'margin' or 'entropy', default 'confidence'), as in
--   score_levels.
-- How: the levels of every cell are put in order once, and one running sum over all of them
--   counts the rows from the top; a cell's counts are that sum less the rows of the cells
--   before it. A window partitioned by cell would give the same counts at twice the cost. The
--   running sums follow the order of the ORDER BY beneath them (DuckDB computes a frame with
--   no ORDER BY in the order its rows arrive); each level is checked against the one before
--   it in the same window, so levels that arrived in another order stop the query with an
--   error, never give wrong counts. The sums are DOUBLE: exact for counts below 2^53.
-- The view selective_curve_counts calls this (the rows a commit stores).
CREATE OR REPLACE MACRO selective_curve_counts(source := 'predictions', score := 'confidence') AS TABLE
WITH levels AS (
    SELECT cell, score_value, CAST(n AS DOUBLE) AS n, n_correct
    FROM score_levels(source, score := score)
),
cells AS (
    SELECT
        cell,
        sum(n) AS n_cell,
        sum(n_correct) AS n_correct_cell,
        count(*) FILTER (WHERE score_value IS NULL) AS unscored
    FROM levels
    GROUP BY cell
),
curve_cells AS (
    -- the cells with a curve (every row scored), and the rows of those before each
    SELECT
        cell,
        n_cell,
        coalesce(sum(n_cell) OVER earlier, 0.0) AS n_before,
        coalesce(sum(n_correct_cell) OVER earlier, 0.0) AS n_correct_before
    FROM cells
    WHERE unscored = 0
    WINDOW earlier AS (ORDER BY cell ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
ordered AS (
    SELECT l.cell, l.score_value, l.n, l.n_correct, c.n_cell, c.n_before, c.n_correct_before
    FROM levels AS l
    JOIN curve_cells AS c ON l.cell = c.cell
    ORDER BY l.cell, l.score_value DESC
),
running AS MATERIALIZED (
    -- materialised: the join and the order below run on every thread, not in this stream
    SELECT
        cell,
        score_value,
        n,
        n_cell,
        CASE
            WHEN lag(cell) OVER from_top > cell
                OR (lag(cell) OVER from_top = cell AND lag(score_value) OVER from_top <= score_value)
            THEN error('selective_curve: the levels reached the running sums out of order, so '
                       || 'the curve cannot be counted on this DuckDB version.')
            ELSE sum(n) OVER from_top - n_before
        END AS accepted,
        sum(n_correct) OVER from_top - n_correct_before AS accepted_correct
    FROM ordered
    WINDOW from_top AS (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT
    k.study, k.dataset, k.model, k.corruption, k.severity, k.label,
    r.score_value AS threshold,
    CAST(r.n AS BIGINT) AS n,
    CAST(r.accepted AS BIGINT) AS accepted,
    CAST(r.accepted_correct AS BIGINT) AS accepted_correct,
    CAST(r.n_cell AS BIGINT) AS n_cell
FROM running AS r
JOIN cell_ids(source) AS k ON r.cell = k.cell
ORDER BY r.cell, r.score_value DESC;
