-- harmonic: Hₙ = Σᵢ₌₁ⁿ 1/i (H₀ = 0), for AURC* (docs/metrics.md), to about 1e-16 relative.
-- Grain: scalar.
-- Definition: H_{n+10} from the asymptotic series ψ(N + 1) = ln N + γ + 1/(2N) − Σₖ B₂ₖ/(2k N²ᵏ)
--   (seven terms, Horner in x = 1/N²; error below 1e-17 for N >= 10), minus 1/(n+10) … 1/(n+1),
--   operation for operation as relcol.metrics.harmonic, so both engines agree to the last bits.
-- Inputs: n, a non-negative integer. Parameters: none.
CREATE OR REPLACE MACRO harmonic(n) AS
    CASE WHEN n = 0 THEN 0.0 ELSE
        ln(CAST(n AS DOUBLE) + 10) + 5.772156649015329e-1 + 0.5 / (CAST(n AS DOUBLE) + 10)
        - (((((((0.0 + 1 / 12) * (1 / ((CAST(n AS DOUBLE) + 10) * (CAST(n AS DOUBLE) + 10)))
            + -691 / 32760) * (1 / ((CAST(n AS DOUBLE) + 10) * (CAST(n AS DOUBLE) + 10)))
            + 1 / 132) * (1 / ((CAST(n AS DOUBLE) + 10) * (CAST(n AS DOUBLE) + 10)))
            + -1 / 240) * (1 / ((CAST(n AS DOUBLE) + 10) * (CAST(n AS DOUBLE) + 10)))
            + 1 / 252) * (1 / ((CAST(n AS DOUBLE) + 10) * (CAST(n AS DOUBLE) + 10)))
            + -1 / 120) * (1 / ((CAST(n AS DOUBLE) + 10) * (CAST(n AS DOUBLE) + 10)))
            + 1 / 12) * (1 / ((CAST(n AS DOUBLE) + 10) * (CAST(n AS DOUBLE) + 10)))
        - 1 / (CAST(n AS DOUBLE) + 10) - 1 / (CAST(n AS DOUBLE) + 9) - 1 / (CAST(n AS DOUBLE) + 8)
        - 1 / (CAST(n AS DOUBLE) + 7) - 1 / (CAST(n AS DOUBLE) + 6) - 1 / (CAST(n AS DOUBLE) + 5)
        - 1 / (CAST(n AS DOUBLE) + 4) - 1 / (CAST(n AS DOUBLE) + 3) - 1 / (CAST(n AS DOUBLE) + 2)
        - 1 / (CAST(n AS DOUBLE) + 1)
    END;
