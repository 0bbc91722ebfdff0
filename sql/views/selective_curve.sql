-- selective_curve: the risk–coverage curve of every cell, one point per confidence level.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct
--   confidence, from the highest down.
-- Columns: the cell key, score ('confidence'), threshold, n, accepted, coverage, risk
--   (see sql/macros/selective_curve.sql).
-- Inputs: view selective_curve_counts (stored at commit where small, else computed from the
--   long table); its order, which a projection keeps. coverage and risk are the divisions of
--   macro selective_curve, in DOUBLE, so both give the same bits.
-- Parameters: none. Another score: SELECT * FROM selective_curve(score := 'entropy').
CREATE OR REPLACE VIEW selective_curve AS
SELECT
    study, dataset, model, corruption, severity, label,
    'confidence' AS score,
    threshold,
    n,
    accepted,
    accepted / n_cell AS coverage,
    (accepted - accepted_correct) / accepted AS risk
FROM selective_curve_counts;
