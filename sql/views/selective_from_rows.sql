-- selective_from_rows: the rows of view selective computed from the long table, for the studies
--   whose selective rows were not stored at commit (view predictions_unstored).
--   What each row is: AURC, its optimum and excess, risk at 80 % coverage, coverage at 5 % risk.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Columns: the cell key, score ('confidence'), n, aurc, aurc_optimal, e_aurc,
--   risk_at_coverage, coverage_at_risk, target_coverage (0.8), target_risk (0.05)
--   (see sql/macros/selective.sql).
-- Inputs: view predictions_unstored; macro selective.
-- Parameters: none. Other targets: SELECT * FROM selective(coverage := 0.9, risk := 0.02).
CREATE OR REPLACE VIEW selective_from_rows AS
SELECT
    study, dataset, model, corruption, severity, label,
    score, n, aurc, aurc_optimal, e_aurc, risk_at_coverage, coverage_at_risk,
    target_coverage, target_risk
FROM selective('predictions_unstored');
