-- consistency: samplewise consistency of every cell along each axis of variation (docs/consistency.md).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis ('repeat':
--   the corruption repeats of one seed are the replicates; 'seed': the training seeds of one
--   repeat), where the axis has τ >= 2 replicates.
-- Columns: the cell key, axis, replicates, strata, pairs, ec_corr_pairs, pa_v_pairs, n,
--   accuracy, consistently_correct, always_wrong, flipping, distinct_classes,
--   prediction_entropy, ec_l, ec_l_pooled, ec_g, ec_acc, ec_corr, pa, churn, pa_kappa, pa_v,
--   kappa_error (see sql/macros/consistency.sql).
-- Inputs: views stored_consistency (the rows stored at commit) and consistency_from_rows (the
--   rest, computed from the long table); macro consistency.
-- Parameters: none.
CREATE OR REPLACE VIEW consistency AS
SELECT *
FROM (SELECT * FROM stored_consistency UNION ALL BY NAME SELECT * FROM consistency_from_rows)
ORDER BY study, dataset, model, corruption, severity, label, axis;
