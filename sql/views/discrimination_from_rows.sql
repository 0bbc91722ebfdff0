-- discrimination_from_rows: the rows of view discrimination computed from the long table, for the studies
--   whose discrimination rows were not stored at commit (view predictions_unstored).
--   What each row is: how well the confidence separates right from wrong, per cell.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Columns: the cell key, score ('confidence'), n, auroc, aupr_success, aupr_error,
--   fpr_at_95tpr, cohens_d, point_biserial (see sql/macros/discrimination.sql).
-- Inputs: view predictions_unstored; macro discrimination.
-- Parameters: none. Another score: SELECT * FROM discrimination(score := 'margin').
CREATE OR REPLACE VIEW discrimination_from_rows AS
SELECT
    study, dataset, model, corruption, severity, label,
    score, n, auroc, aupr_success, aupr_error, fpr_at_95tpr, cohens_d, point_biserial
FROM discrimination('predictions_unstored');
