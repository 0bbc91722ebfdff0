-- poisson_inverse: the inverse Poisson(1) CDF of a uniform u in (0, 1), BIGINT.
-- Grain: scalar.
-- Inputs: u, a DOUBLE in (0, 1) (``uniform``).
-- Parameters: none.
-- The smallest j with u <= F(j), F(j) the Poisson(1) CDF as the DOUBLEs of
-- relcol.analysis._bootstrap.POISSON_CDF (F(15) is 1 − 1.8e−14, beyond a 32-bit uniform).
CREATE OR REPLACE MACRO poisson_inverse(u) AS (
    CASE
        WHEN u <= 0.36787944117144233 THEN 0
        WHEN u <= 0.7357588823428847 THEN 1
        WHEN u <= 0.9196986029286058 THEN 2
        WHEN u <= 0.9810118431238463 THEN 3
        WHEN u <= 0.9963401531726563 THEN 4
        WHEN u <= 0.9994058151824183 THEN 5
        WHEN u <= 0.999916758850712 THEN 6
        WHEN u <= 0.9999897508033254 THEN 7
        WHEN u <= 0.999998874797402 THEN 8
        WHEN u <= 0.9999998885745217 THEN 9
        WHEN u <= 0.9999999899522337 THEN 10
        WHEN u <= 0.9999999991683893 THEN 11
        WHEN u <= 0.9999999999364023 THEN 12
        WHEN u <= 0.9999999999954802 THEN 13
        WHEN u <= 0.9999999999997 THEN 14
        WHEN u <= 0.9999999999999813 THEN 15
        ELSE 16
    END
);
