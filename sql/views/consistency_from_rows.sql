-- consistency_from_rows: the rows of view consistency computed from the long table, for the studies
--   whose consistency rows were not stored at commit (view predictions_unstored).
--   What each row is: samplewise consistency of every cell along each axis of variation (docs/consistency.md).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis ('repeat':
--   the corruption repeats of one seed are the replicates; 'seed': the training seeds of one
--   repeat), where the axis has τ >= 2 replicates.
-- Columns: the cell key, axis, replicates, strata, pairs, ec_corr_pairs, pa_v_pairs, n,
--   accuracy, consistently_correct, always_wrong, flipping, distinct_classes,
--   prediction_entropy, ec_l, ec_l_pooled, ec_g, ec_acc, ec_corr, pa, churn, pa_kappa, pa_v,
--   kappa_error (see sql/macros/consistency.sql).
-- Inputs: view predictions_unstored; macro consistency.
-- Parameters: none.
CREATE OR REPLACE VIEW consistency_from_rows AS
SELECT
    study, dataset, model, corruption, severity, label, axis, replicates, strata, pairs,
    ec_corr_pairs, pa_v_pairs, n,
    accuracy, consistently_correct, always_wrong, flipping, distinct_classes, prediction_entropy,
    ec_l, ec_l_pooled, ec_g, ec_acc, ec_corr, pa, churn, pa_kappa, pa_v, kappa_error
FROM consistency('predictions_unstored');
