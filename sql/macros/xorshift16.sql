-- xorshift16: x XOR (x >> 16), one step of relcol's counter-based generator (see mix32).
-- Grain: scalar.
-- Inputs: x, a BIGINT in [0, 2^32). Parameters: none.
-- The Polars twin is relcol.metrics._random._xorshift16.
CREATE OR REPLACE MACRO xorshift16(x) AS xor(x >> 16, x);
