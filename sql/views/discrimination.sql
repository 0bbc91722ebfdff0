-- discrimination: how well the confidence separates right from wrong, per cell.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Columns: the cell key, score ('confidence'), n, auroc, aupr_success, aupr_error,
--   fpr_at_95tpr, cohens_d, point_biserial (see sql/macros/discrimination.sql).
-- Inputs: view predictions; macro discrimination.
-- Parameters: none. Another score: SELECT * FROM discrimination(score := 'margin').
CREATE OR REPLACE VIEW discrimination AS
SELECT
    study, dataset, model, corruption, severity, label,
    score, n, auroc, aupr_success, aupr_error, fpr_at_95tpr, cohens_d, point_biserial
FROM discrimination('predictions');
