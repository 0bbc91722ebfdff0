-- selective_curve: the risk–coverage curve of every cell, one point per confidence level.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct
--   confidence, from the highest down.
-- Columns: the cell key, score ('confidence'), threshold, n, accepted, coverage, risk
--   (see sql/macros/selective_curve.sql).
-- Inputs: view predictions; macro selective_curve.
-- Parameters: none. Another score: SELECT * FROM selective_curve(score := 'entropy').
CREATE OR REPLACE VIEW selective_curve AS
SELECT
    study, dataset, model, corruption, severity, label,
    score, threshold, n, accepted, coverage, risk
FROM selective_curve('predictions');
