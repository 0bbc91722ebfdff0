-- consistency(source): samplewise consistency of every cell along each axis of variation
--   (docs/consistency.md).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis that has
--   a stratum with τ >= 2 replicates. Axis 'repeat': the replicates are the corruption repeats
--   of one training seed (the stratum); axis 'seed': the training seeds of one repeat. Every
--   value is computed per stratum (pairwise metrics: the mean over its C(τ, 2) replicate pairs)
--   and then averaged over the strata, each weighing the same. Ordered by cell and axis.
-- Columns: the cell key, axis, replicates (τ, the largest over strata), strata, pairs (replicate
--   pairs in all), ec_corr_pairs and pa_v_pairs (the pairs that define ec_corr and pa_v, the
--   two pairwise metrics a pair can leave NULL), n (samples, the largest over strata) (BIGINT); accuracy (mean replicate
--   accuracy), consistently_correct, always_wrong, flipping, distinct_classes,
--   prediction_entropy (per-sample measures), ec_l_pooled, ec_g, ec_acc, pa, churn (closed forms
--   of consistency_tally's counts), ec_l, ec_corr, pa_kappa, pa_v, kappa_error (means over the
--   pairs of consistency_gram, skipping NULL pairs) (DOUBLE).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros consistency_layout, consistency_units, consistency_tally,
--   consistency_gram.
-- Parameters: none.
-- The Polars twin is relcol.metrics.consistency (the *_from_counts and *_from_pairs builders).
CREATE OR REPLACE MACRO consistency(source := 'predictions') AS TABLE
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
    SELECT DISTINCT g, study, dataset, model, corruption, severity, label, axis, stratum, tau
    FROM consistency_layout_
),
counts AS (  -- closed forms over the per-sample counts of each stratum
    SELECT
        g,
        count(*) AS n,
        1 - sum(wrong) / sum(replicates) AS accuracy,
        avg(CASE WHEN wrong = 0 THEN 1.0 ELSE 0.0 END) AS consistently_correct,
        avg(CASE WHEN wrong = replicates THEN 1.0 ELSE 0.0 END) AS always_wrong,
        avg(CASE WHEN wrong > 0 AND wrong < replicates THEN 1.0 ELSE 0.0 END) AS flipping,
        avg(CAST(distinct_classes AS DOUBLE)) AS distinct_classes,
        avg(prediction_entropy) AS prediction_entropy,
        sum(wrong * (wrong - 1) / 2) AS both_wrong,            -- Σ_pairs |eᵢ ∧ eⱼ|
        sum(replicates * (replicates - 1) / 2 - (replicates - wrong) * (replicates - wrong - 1) / 2)
            AS either,                                   -- Σ_pairs |eᵢ ∨ eⱼ|
        sum(wrong * (wrong - 1) / 2 + (replicates - wrong) * (replicates - wrong - 1) / 2) AS same,
        sum(CAST(agreeing_pairs AS DOUBLE)) AS agreeing,
        sum(replicates * (replicates - 1) / 2) AS pairs  -- n·C(τ, 2)
    FROM consistency_tally_
    GROUP BY g
),
pair_means AS (
    SELECT g, avg(ec_l) AS ec_l, avg(ec_corr) AS ec_corr, avg(pa_kappa) AS pa_kappa,
        avg(pa_v) AS pa_v, avg(kappa_error) AS kappa_error,
        count(ec_corr) AS ec_corr_pairs, count(pa_v) AS pa_v_pairs
    FROM consistency_gram(
        units := 'consistency_units_', tally := 'consistency_tally_', layout := 'consistency_layout_'
    )
    GROUP BY g
),
per_stratum AS (
    SELECT
        g, n, accuracy, consistently_correct, always_wrong, flipping, distinct_classes,
        prediction_entropy,
        CASE WHEN either = 0 THEN 1.0 ELSE both_wrong / either END AS ec_l_pooled,
        both_wrong / pairs AS ec_g,
        same / pairs AS ec_acc,
        agreeing / pairs AS pa
    FROM counts
)
SELECT
    s.study, s.dataset, s.model, s.corruption, s.severity, s.label, s.axis,
    max(s.tau) AS replicates,
    count(*) AS strata,
    CAST(sum(s.tau * (s.tau - 1) // 2) AS BIGINT) AS pairs,
    CAST(sum(p.ec_corr_pairs) AS BIGINT) AS ec_corr_pairs,
    CAST(sum(p.pa_v_pairs) AS BIGINT) AS pa_v_pairs,
    max(c.n) AS n,
    avg(c.accuracy) AS accuracy,
    avg(c.consistently_correct) AS consistently_correct,
    avg(c.always_wrong) AS always_wrong,
    avg(c.flipping) AS flipping,
    avg(c.distinct_classes) AS distinct_classes,
    avg(c.prediction_entropy) AS prediction_entropy,
    avg(p.ec_l) AS ec_l,
    avg(c.ec_l_pooled) AS ec_l_pooled,
    avg(c.ec_g) AS ec_g,
    avg(c.ec_acc) AS ec_acc,
    avg(p.ec_corr) AS ec_corr,
    avg(c.pa) AS pa,
    1 - avg(c.pa) AS churn,
    avg(p.pa_kappa) AS pa_kappa,
    avg(p.pa_v) AS pa_v,
    avg(p.kappa_error) AS kappa_error
FROM strata AS s
JOIN per_stratum AS c USING (g)
JOIN pair_means AS p USING (g)
GROUP BY s.study, s.dataset, s.model, s.corruption, s.severity, s.label, s.axis
ORDER BY study, dataset, model, corruption, severity, label, axis;
