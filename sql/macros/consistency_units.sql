-- consistency_units(source, layout): every prediction row once per axis it is a replicate on
--   (docs/consistency.md).
-- Grain: one row per prediction row × axis with τ >= 2.
-- Columns: g (the stratum, see consistency_layout), replicate (its seed or repeat), sample_id,
--   y_clean, y_pred, wrong (BOOLEAN, NOT correct).
-- Inputs: source, the name of a table or view with the long table's columns; layout, the name
--   of a table, view or CTE holding consistency_layout(source).
-- Parameters: none.
CREATE OR REPLACE MACRO consistency_units(source := 'predictions', layout := 'consistency_layout_') AS TABLE
SELECT
    l.g, l.replicate, p.sample_id, p.y_clean, p.y_pred, NOT p.correct AS wrong
FROM query_table(source) AS p
JOIN query_table(layout) AS l
    ON p.study = l.study AND p.dataset = l.dataset AND p.model = l.model
    AND p.corruption = l.corruption AND p.severity = l.severity
    AND p.label IS NOT DISTINCT FROM l.label
    AND p.seed = l.seed AND p."repeat" = l."repeat";
