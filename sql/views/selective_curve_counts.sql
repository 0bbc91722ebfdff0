-- selective_curve_counts: the counts behind the risk–coverage curve of every cell, one row per
--   confidence level: the rows of view selective_curve before its two divisions.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct
--   confidence, from the highest down.
-- Columns: the cell key, threshold, n (rows at it), accepted (rows with a confidence >= it),
--   accepted_correct (right rows among them), n_cell (the cell's rows), counts BIGINT
--   (see sql/macros/selective_curve_counts.sql).
-- Inputs: views stored_selective_curve_counts (the rows stored at commit, where they are small
--   beside the study's parts) and selective_curve_counts_from_rows (the rest, computed from the
--   long table); macro selective_curve_counts.
-- Parameters: none. Another score: SELECT * FROM selective_curve_counts(score := 'margin').
CREATE OR REPLACE VIEW selective_curve_counts AS
SELECT *
FROM (
    SELECT * FROM stored_selective_curve_counts
    UNION ALL BY NAME
    SELECT * FROM selective_curve_counts_from_rows
)
ORDER BY study, dataset, model, corruption, severity, label, threshold DESC;
