-- cell_rows(source): the rows of source with their cell's id (cell_ids) in front.
-- Grain: one row per row of source.
-- Columns: cell (BIGINT), then every column of source.
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macro cell_ids. Parameters: none.
CREATE OR REPLACE MACRO cell_rows(source := 'predictions') AS TABLE
SELECT c.cell, r.*
FROM query_table(source) AS r
JOIN cell_ids(source) AS c
    ON r.study = c.study AND r.dataset = c.dataset AND r.model = c.model
    AND r.corruption = c.corruption AND r.severity = c.severity
    AND r.label IS NOT DISTINCT FROM c.label;
