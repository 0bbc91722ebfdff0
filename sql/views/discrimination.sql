-- discrimination: how well the confidence separates right from wrong, per cell.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Columns: the cell key, score ('confidence'), n, auroc, aupr_success, aupr_error,
--   fpr_at_95tpr, cohens_d, point_biserial (see sql/macros/discrimination.sql).
-- Inputs: views stored_discrimination (the rows stored at commit) and discrimination_from_rows (the
--   rest, computed from the long table); macro discrimination.
-- Parameters: none. Another score: SELECT * FROM discrimination(score := 'margin').
CREATE OR REPLACE VIEW discrimination AS
SELECT *
FROM (SELECT * FROM stored_discrimination UNION ALL BY NAME SELECT * FROM discrimination_from_rows)
ORDER BY study, dataset, model, corruption, severity, label;
