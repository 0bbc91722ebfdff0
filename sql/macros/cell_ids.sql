-- cell_ids(source): a BIGINT id for every cell, numbered in the order of its keys (NULLs last).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Why: a window partitioned by one integer sorts much faster than one partitioned by the six
--   keys (three strings among them), so the sorting steps of the metric macros number the cells
--   first (cell_rows), work on ids, and join the keys back onto their small results.
-- Columns: the cell key, cell.
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'). Parameters: none.
CREATE OR REPLACE MACRO cell_ids(source := 'predictions') AS TABLE
SELECT
    study, dataset, model, corruption, severity, label,
    row_number() OVER (ORDER BY study, dataset, model, corruption, severity, label) AS cell
FROM (SELECT DISTINCT study, dataset, model, corruption, severity, label FROM query_table(source));
