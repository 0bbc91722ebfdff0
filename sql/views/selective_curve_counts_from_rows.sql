-- selective_curve_counts_from_rows: the rows of view selective_curve_counts computed from the
--   long table, for the studies whose counts were not stored at commit (view
--   predictions_without_curve).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × distinct
--   confidence, in the order of the cells, then from the highest confidence down.
-- Columns: the cell key, threshold, n, accepted, accepted_correct, n_cell
--   (see sql/macros/selective_curve_counts.sql).
-- Inputs: view predictions_without_curve; macro selective_curve_counts.
-- Parameters: none.
CREATE OR REPLACE VIEW selective_curve_counts_from_rows AS
SELECT
    study, dataset, model, corruption, severity, label,
    threshold, n, accepted, accepted_correct, n_cell
FROM selective_curve_counts('predictions_without_curve');
