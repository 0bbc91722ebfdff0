-- consistency_samples: samplewise consistency of every test sample, per cell and axis
--   (docs/consistency.md): which samples flip, and how often.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis × sample.
-- Columns: the cell key, axis, sample_id, y_clean, replicates, strata, accuracy,
--   consistently_correct, always_wrong, flipping, distinct_classes, prediction_entropy, ec_g,
--   ec_acc, pa (see sql/macros/consistency_samples.sql).
-- Inputs: views stored_consistency_samples (the rows stored at commit) and consistency_samples_from_rows (the
--   rest, computed from the long table); macro consistency_samples.
-- Parameters: none.
CREATE OR REPLACE VIEW consistency_samples AS
SELECT *
FROM (SELECT * FROM stored_consistency_samples UNION ALL BY NAME SELECT * FROM consistency_samples_from_rows)
ORDER BY study, dataset, model, corruption, severity, label, axis, sample_id;
