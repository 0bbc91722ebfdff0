-- proba_entropy: −Σₖ pₖ ln pₖ of a probability vector, in nats, 0·ln 0 = 0 (docs/metrics.md).
-- Grain: scalar. NULL for a NULL or empty vector.
-- Inputs: proba, a list of probabilities (FLOAT[] in the long table, widened to DOUBLE).
-- Parameters: none. The Polars twin is relcol.metrics.proba_entropy.
CREATE OR REPLACE MACRO proba_entropy(proba) AS
    CASE WHEN len(proba) > 0 THEN
        -- every term is <= 0: abs of the sum is the entropy, never -0.0
        abs(list_sum(list_transform(CAST(proba AS DOUBLE[]),
                                    lambda p: CASE WHEN p > 0 THEN p * ln(p) ELSE 0.0 END)))
    END;
