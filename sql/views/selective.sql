-- selective: AURC, its optimum and excess, risk at 80 % coverage, coverage at 5 % risk.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Columns: the cell key, score ('confidence'), n, aurc, aurc_optimal, e_aurc,
--   risk_at_coverage, coverage_at_risk, target_coverage (0.8), target_risk (0.05)
--   (see sql/macros/selective.sql).
-- Inputs: views stored_selective (the rows stored at commit) and selective_from_rows (the
--   rest, computed from the long table); macro selective.
-- Parameters: none. Other targets: SELECT * FROM selective(coverage := 0.9, risk := 0.02).
CREATE OR REPLACE VIEW selective AS
SELECT *
FROM (SELECT * FROM stored_selective UNION ALL BY NAME SELECT * FROM selective_from_rows)
ORDER BY study, dataset, model, corruption, severity, label;
