-- multilabel_pairs: every multi-label prediction in both calibration modes (docs/multilabel.md),
--   the input of multilabel_bins and multilabel.
-- Grain: one row per multi-label prediction (label IS NOT NULL) × mode × target.
-- Columns: the long table's key, then
--   mode: 'prediction_confidence' (confidence = c, the stated confidence in the predicted 0/1
--         outcome) or 'positive_class' (confidence = p = P(label present), which is c when
--         y_pred = 1 and 1 − c when y_pred = 0);
--   target: 'binary' (outcome = correct in prediction_confidence mode, y_true in positive_class
--         mode) or 'agreement' (outcome = the annotators' agreement a with the prediction, or
--         a / 1 − a for presence; only rows that have an agreement);
--   confidence, outcome (DOUBLE).
-- Inputs: views predictions, annotations.
-- Parameters: none.
CREATE OR REPLACE VIEW multilabel_pairs AS
WITH labelled AS (
    SELECT
        p.study, p.dataset, p.model, p.corruption, p.severity, p.seed, p."repeat",
        p.sample_id, p.label, p.y_true, p.y_pred,
        CAST(p.confidence AS DOUBLE) AS c,
        CAST(p.correct AS DOUBLE) AS z,
        CASE WHEN p.y_pred = 1 THEN CAST(p.confidence AS DOUBLE)
             ELSE 1 - CAST(p.confidence AS DOUBLE) END AS p_present,
        a.agreement
    FROM predictions AS p
    LEFT JOIN annotations AS a
        ON  a.study = p.study AND a.dataset = p.dataset AND a.model = p.model
        AND a.corruption = p.corruption AND a.severity = p.severity AND a.seed = p.seed
        AND a."repeat" = p."repeat" AND a.sample_id = p.sample_id AND a.label = p.label
    WHERE p.label IS NOT NULL
),
modes AS (
    SELECT *, 'prediction_confidence' AS mode, 'binary' AS target,
           c AS confidence, z AS outcome
    FROM labelled
    UNION ALL
    SELECT *, 'positive_class', 'binary', p_present, CAST(y_true AS DOUBLE)
    FROM labelled
    UNION ALL
    SELECT *, 'prediction_confidence', 'agreement', c, agreement
    FROM labelled WHERE agreement IS NOT NULL
    UNION ALL
    SELECT *, 'positive_class', 'agreement', p_present,
           CASE WHEN y_pred = 1 THEN agreement ELSE 1 - agreement END
    FROM labelled WHERE agreement IS NOT NULL
)
SELECT
    study, dataset, model, corruption, severity, seed, "repeat", sample_id, label,
    mode, target, confidence, outcome
FROM modes;
