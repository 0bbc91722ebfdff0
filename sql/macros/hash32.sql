-- hash32: relcol's counter-based hash of four integer keys (relcol/metrics/_random.py).
-- Grain: scalar.
-- Definition: h starts at 0x2545F491; for each key k0..k3 in order, its low word k & (2^32 − 1),
--   then its high word (k >> 32) & (2^32 − 1), is absorbed as h ← ((h XOR w) · 0x5BD1E995)
--   mod 2^32 (each product below 2^63; each step uses h once, so the expansion stays linear);
--   the result is mix32(h), a BIGINT in [0, 2^32).
-- Inputs: k0, k1, k2, k3: integers (cast to BIGINT; negative values use two's complement);
--   macros absorb32 and mix32.
-- Parameters: none. The Polars twin is relcol.metrics.hash32 (same bits for the same four keys).
CREATE OR REPLACE MACRO hash32(k0, k1, k2, k3) AS mix32(
    absorb32(absorb32(absorb32(absorb32(625341585, k0), k1), k2), k3)
);
