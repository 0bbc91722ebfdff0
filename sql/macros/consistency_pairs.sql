-- consistency_pairs(source): the error Gram entries, prediction agreement and metrics of every
--   replicate pair (docs/consistency.md).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis × stratum
--   × replicate pair (replicate_i < replicate_j). Ordered by cell, axis, stratum, pair.
-- Columns: the cell key, axis, stratum, replicate_i, replicate_j (the seeds or repeats
--   compared), then the columns of consistency_gram: n, wrong_i, wrong_j, both_wrong, agree,
--   chance_agreement, phi2, classes_i, classes_j, ec_l, ec_g, ec_acc, ec_corr, pa, pa_kappa,
--   pa_v, kappa_error.
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros consistency_layout, consistency_units, consistency_tally,
--   consistency_gram.
-- Parameters: none.
-- The Polars twin is relcol.metrics.consistency_pairs.
CREATE OR REPLACE MACRO consistency_pairs(source := 'predictions') AS TABLE
WITH consistency_layout_ AS MATERIALIZED (
    FROM consistency_layout(source)
),
consistency_units_ AS MATERIALIZED (
    FROM consistency_units(source, layout := 'consistency_layout_')
),
consistency_tally_ AS MATERIALIZED (
    FROM consistency_tally(units := 'consistency_units_', layout := 'consistency_layout_')
),
strata AS (
    SELECT DISTINCT g, study, dataset, model, corruption, severity, label, axis, stratum
    FROM consistency_layout_
)
SELECT
    s.study, s.dataset, s.model, s.corruption, s.severity, s.label, s.axis, s.stratum,
    p.replicate_i, p.replicate_j, p.n, p.wrong_i, p.wrong_j, p.both_wrong, p.agree,
    p.chance_agreement, p.phi2, p.classes_i, p.classes_j,
    p.ec_l, p.ec_g, p.ec_acc, p.ec_corr, p.pa, p.pa_kappa, p.pa_v, p.kappa_error
FROM consistency_gram(
    units := 'consistency_units_', tally := 'consistency_tally_', layout := 'consistency_layout_'
) AS p
JOIN strata AS s USING (g)
ORDER BY study, dataset, model, corruption, severity, label, axis, stratum, replicate_i, replicate_j;
