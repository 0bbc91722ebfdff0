-- consistency_samples_from_rows: the rows of view consistency_samples computed from the long table, for the studies
--   whose consistency_samples rows were not stored at commit (view predictions_unstored).
--   What each row is: samplewise consistency of every test sample, per cell and axis
--   (docs/consistency.md): which samples flip, and how often.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis × sample.
-- Columns: the cell key, axis, sample_id, y_clean, replicates, strata, accuracy,
--   consistently_correct, always_wrong, flipping, distinct_classes, prediction_entropy, ec_g,
--   ec_acc, pa (see sql/macros/consistency_samples.sql).
-- Inputs: view predictions_unstored; macro consistency_samples.
-- Parameters: none.
CREATE OR REPLACE VIEW consistency_samples_from_rows AS
SELECT
    study, dataset, model, corruption, severity, label, axis, sample_id, y_clean, replicates,
    strata, accuracy, consistently_correct, always_wrong, flipping, distinct_classes,
    prediction_entropy, ec_g, ec_acc, pa
FROM consistency_samples('predictions_unstored');
