-- predictions_unstored: the long table of the studies whose per-cell views were not stored at
--   commit (written by an older relcol, or a stored file removed): the views computed from rows
--   read these rows only, and the stored rows for the rest.
-- Grain and columns: those of view predictions.
-- Inputs: variable relcol_predictions_unstored (relcol sets it; the parts of those studies).
CREATE OR REPLACE VIEW predictions_unstored AS
SELECT
    study, dataset, model, corruption, severity, seed, "repeat", sample_id, label,
    y_true, y_clean, y_pred, confidence, correct, proba, run_id
FROM read_parquet(getvariable('relcol_predictions_unstored'), hive_partitioning = false);
