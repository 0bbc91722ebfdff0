-- consistency_counts(source): per-sample counts over the replicates of each stratum, the
--   sufficient statistics of consistency's closed forms (METRICS.md §7).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis × stratum
--   × sample, for strata with τ >= 2 replicates and samples all τ predicted. Ordered by cell,
--   axis, stratum, sample_id, nulls last.
-- Columns: the cell key, axis ('repeat' or 'seed'), stratum (the seed, resp. the repeat, held
--   fixed), sample_id, y_clean, replicates (τ), wrong (kₛ), distinct_classes, agreeing_pairs
--   (Σ_c C(n_sc, 2)) (BIGINT), prediction_entropy (DOUBLE, normalised by ln K).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros consistency_layout, consistency_units, consistency_tally.
-- Parameters: none.
-- The Polars twin is relcol.metrics.consistency_counts.
CREATE OR REPLACE MACRO consistency_counts(source := 'predictions') AS TABLE
WITH consistency_layout_ AS MATERIALIZED (
    FROM consistency_layout(source)
),
consistency_units_ AS (
    FROM consistency_units(source, layout := 'consistency_layout_')
),
strata AS (
    SELECT DISTINCT g, study, dataset, model, corruption, severity, label, axis, stratum
    FROM consistency_layout_
)
SELECT
    s.study, s.dataset, s.model, s.corruption, s.severity, s.label, s.axis, s.stratum,
    t.sample_id, t.y_clean, t.replicates, t.wrong, t.distinct_classes, t.agreeing_pairs,
    t.prediction_entropy
FROM consistency_tally(units := 'consistency_units_', layout := 'consistency_layout_') AS t
JOIN strata AS s USING (g)
ORDER BY study, dataset, model, corruption, severity, label, axis, stratum, sample_id;
