-- consistency_counts(source): per-sample counts over the replicates of each stratum, the
--   sufficient statistics of consistency's closed forms (docs/consistency.md).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis × stratum
--   × sample, for strata with τ >= 2 replicates and samples all τ predicted. Ordered by cell,
--   axis, stratum, sample_id, nulls last.
-- Columns: the cell key, axis ('repeat' or 'seed'), stratum (the seed, resp. the repeat, held
--   fixed), sample_id, y_clean, replicates (τ), wrong (kₛ), distinct_classes, agreeing_pairs
--   (Σ_c C(n_sc, 2)) (BIGINT), prediction_entropy (DOUBLE, normalised by ln K).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macro consistency_strata (which computes every column).
-- Parameters: none.
-- The Polars twin is relcol.metrics.consistency_counts.
CREATE OR REPLACE MACRO consistency_counts(source := 'predictions') AS TABLE
SELECT *
FROM consistency_strata(source)
ORDER BY study, dataset, model, corruption, severity, label, axis, stratum, sample_id;
