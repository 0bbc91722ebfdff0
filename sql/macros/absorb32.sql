-- absorb32: one key absorbed into the state of relcol's counter-based hash (see hash32).
-- Grain: scalar.
-- Definition: the key's low word, then its high word, each as h ← ((h XOR w) · 0x5BD1E995)
--   mod 2^32; h is used once per word, so nesting absorb32 grows the expression linearly.
-- Inputs: h, a BIGINT in [0, 2^32); k, an integer (two's complement words when negative).
-- Parameters: none. The Polars twin is relcol.metrics._random._absorb (twice per key).
CREATE OR REPLACE MACRO absorb32(h, k) AS
    (xor((xor(h, CAST(k AS BIGINT) & 4294967295) * 1540483477) & 4294967295,
         (CAST(k AS BIGINT) >> 32) & 4294967295) * 1540483477) & 4294967295;
