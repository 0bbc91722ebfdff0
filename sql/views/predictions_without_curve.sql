-- predictions_without_curve: the long table of the studies whose risk–coverage counts were not
--   stored at commit (a commit keeps them only when they are small beside the study's parts;
--   or written by an older relcol, or the stored file removed): the view
--   selective_curve_counts_from_rows reads these rows only, and the stored counts for the rest.
-- Grain and columns: those of view predictions.
-- Inputs: variable relcol_predictions_without_curve (relcol sets it; the parts of those studies).
CREATE OR REPLACE VIEW predictions_without_curve AS
SELECT
    study, dataset, model, corruption, severity, seed, "repeat", sample_id, label,
    y_true, y_clean, y_pred, confidence, correct, proba, run_id
FROM read_parquet(getvariable('relcol_predictions_without_curve'), hive_partitioning = false);
