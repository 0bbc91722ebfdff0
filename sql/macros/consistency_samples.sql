-- consistency_samples(source): samplewise consistency of every test sample, averaged over the
--   strata of its cell and axis (docs/consistency.md).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × axis × sample.
--   Ordered by cell, axis, sample_id, nulls last.
-- Columns: the cell key, axis, sample_id, y_clean, replicates (τ, the largest over strata),
--   strata (BIGINT), then means over strata (DOUBLE): accuracy (share of the sample's
--   replicates right), consistently_correct / always_wrong / flipping (share of strata in which
--   all replicates were right / all wrong / some of each), distinct_classes, prediction_entropy,
--   ec_g (share of replicate pairs both wrong), ec_acc (pairs agreeing on right or wrong),
--   pa (pairs predicting the same class).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macro consistency_strata (consistency_counts, unordered).
-- Parameters: none.
-- The Polars twin is relcol.metrics.consistency_samples.
CREATE OR REPLACE MACRO consistency_samples(source := 'predictions') AS TABLE
SELECT
    study, dataset, model, corruption, severity, label, axis, sample_id,
    min(y_clean) AS y_clean,
    max(replicates) AS replicates,
    count(*) AS strata,
    avg(1 - wrong / replicates) AS accuracy,
    avg(CASE WHEN wrong = 0 THEN 1.0 ELSE 0.0 END) AS consistently_correct,
    avg(CASE WHEN wrong = replicates THEN 1.0 ELSE 0.0 END) AS always_wrong,
    avg(CASE WHEN wrong > 0 AND wrong < replicates THEN 1.0 ELSE 0.0 END) AS flipping,
    avg(CAST(distinct_classes AS DOUBLE)) AS distinct_classes,
    avg(prediction_entropy) AS prediction_entropy,
    avg((wrong * (wrong - 1) / 2) / (replicates * (replicates - 1) / 2)) AS ec_g,
    avg((wrong * (wrong - 1) / 2 + (replicates - wrong) * (replicates - wrong - 1) / 2)
        / (replicates * (replicates - 1) / 2)) AS ec_acc,
    avg(agreeing_pairs / (replicates * (replicates - 1) / 2)) AS pa
FROM consistency_strata(source)
GROUP BY study, dataset, model, corruption, severity, label, axis, sample_id
ORDER BY study, dataset, model, corruption, severity, label, axis, sample_id;
