-- consistency_strata(source): consistency_counts without its order, for a caller that groups
--   its rows again (consistency_samples): sorting 10⁶ rows that are grouped next costs more
--   than the grouping.
-- Grain, columns, inputs: as consistency_counts (which is this, ordered). Unordered.
-- Parameters: none.
CREATE OR REPLACE MACRO consistency_strata(source := 'predictions') AS TABLE
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
JOIN strata AS s USING (g);
