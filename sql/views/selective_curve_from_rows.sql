-- selective_curve_from_rows: the rows of view selective_curve computed from the long table, for the studies
--   whose selective_curve rows were not stored at commit (view predictions_unstored).
--   What each row is: the risk–coverage curve of every cell, one point per confidence level.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct
--   confidence, from the highest down.
-- Columns: the cell key, score ('confidence'), threshold, n, accepted, coverage, risk
--   (see sql/macros/selective_curve.sql).
-- Inputs: view predictions_unstored; macro selective_curve.
-- Parameters: none. Another score: SELECT * FROM selective_curve(score := 'entropy').
CREATE OR REPLACE VIEW selective_curve_from_rows AS
SELECT
    study, dataset, model, corruption, severity, label,
    score, threshold, n, accepted, coverage, risk
FROM selective_curve('predictions_unstored');
