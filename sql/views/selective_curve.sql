-- selective_curve: the risk–coverage curve of every cell, one point per confidence level.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct
--   confidence, from the highest down.
-- Columns: the cell key, score ('confidence'), threshold, n, accepted, coverage, risk
--   (see sql/macros/selective_curve.sql).
-- Inputs: views stored_selective_curve (the rows stored at commit) and selective_curve_from_rows (the
--   rest, computed from the long table); macro selective_curve.
-- Parameters: none. Another score: SELECT * FROM selective_curve(score := 'entropy').
CREATE OR REPLACE VIEW selective_curve AS
SELECT *
FROM (SELECT * FROM stored_selective_curve UNION ALL BY NAME SELECT * FROM selective_curve_from_rows)
ORDER BY study, dataset, model, corruption, severity, label, threshold DESC;
