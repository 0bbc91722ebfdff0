"""A counter-based random generator that Polars and DuckDB evaluate to the same bits.

numpy's generators cannot be reproduced in SQL, and a draw that depends on row order or on
the engine cannot be checked across engines. Here a uniform is a pure function of integer
keys, e.g. (stream, bin, draw, j), so any engine, any partition order and any machine give
the same numbers. The SQL twins are the macros ``xorshift16``, ``mix32``, ``absorb32``,
``hash32`` and ``uniform`` in ``sql/macros/``; a test holds them to these builders bit for bit.

The hash, on 32-bit words kept in BIGINT / Int64 (no product ever reaches 2^63, and DuckDB
refuses integer overflow rather than wrapping):

- each key k (any Int64) is split into its low and high 32-bit words, k & (2^32 − 1) and
  (k >> 32) & (2^32 − 1) (two's complement, so negative keys work);
- the words are absorbed in order, FNV-style: h ← ((h XOR w) · A) mod 2^32, starting from
  h = SEED; A = 0x5BD1E995 (MurmurHash2's multiplier) is below 2^31, so the product stays
  below 2^63, and each step uses h once (a SQL macro expands every use of its argument, so
  a step that used h twice would double the expression's size per key);
- the result is finalised by ``mix32``, two xorshift-multiply rounds (multiplier 0x45D9F3B)
  and a final xorshift, which spreads every input bit over every output bit;
- uniform = (hash + 0.5) / 2^32, in (0, 1) and never 0 or 1 (so log(u) is finite).

A uniform has 32 bits of resolution: ample for Monte Carlo draws and Poisson weights, not a
cryptographic or a 53-bit generator. Keys of one use of the generator should include a
``stream`` constant (``STREAMS`` below, or ``stream_key(name)``) so two uses never share
draws by accident.

>>> import polars as pl
>>> from relcol.metrics import uniform
>>> frame = pl.DataFrame({"draw": [0, 1, 2]})
>>> frame.select(u=uniform(7, 0, "draw", 0))["u"].round(6).to_list()
[0.948389, 0.731629, 0.661679]
"""

from __future__ import annotations

import hashlib

import polars as pl

MASK = 0xFFFFFFFF
#: Absorbing multiplier (MurmurHash2's m), < 2^31.
ABSORB = 0x5BD1E995
#: Finaliser multiplier (the xorshift-multiply integer hash attributed to Thomas Mueller).
MIX = 0x45D9F3B
#: Initial state of the hash.
SEED = 0x2545F491
#: 2^32 as a float: uniform = (hash + 0.5) / 2^32.
TWO_32 = 4294967296.0
#: 2π as the DOUBLE both engines read from this literal.
TAU = 6.283185307179586

#: Stream constants, the first key of every draw relcol makes (documented in METRICS notes).
STREAMS = {
    "ece_null_bernoulli": 1,  # ECE₀: Bernoulli pseudo-rows of small bins
    "ece_null_normal": 2,  # ECE₀: the normal sums of large bins (Box–Muller, two uniforms)
}


def stream_key(name: str) -> int:
    """A stream constant for ``name``: the first 31 bits of its SHA-256, the same everywhere.

    For a use of the generator keyed by text (a study name), compute this once in Python
    and pass the integer to either engine.

    Examples
    --------
    >>> from relcol.metrics import stream_key
    >>> stream_key("bootstrap:default")
    1941477685
    """
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "big") >> 1


def hash32(*keys: pl.Expr | str | int) -> pl.Expr:
    """The 32-bit counter-based hash of ``keys`` as an Int64 in [0, 2^32).

    Parameters
    ----------
    *keys
        Integer keys, each a column name, an expression or a Python int (any Int64 value).
        The SQL macro ``hash32(k0, k1, k2, k3)`` takes exactly four; with four keys the two
        agree bit for bit.

    Returns
    -------
    pl.Expr
        An Int64 expression, elementwise over the keys.
    """
    h: pl.Expr = pl.lit(SEED, pl.Int64)
    for key in keys:
        k = _as_int(key)
        h = _absorb(h, k & MASK)
        h = _absorb(h, (k // (MASK + 1)) & MASK)  # k >> 32: floor division is the shift
    return mix32(h)


def uniform(*keys: pl.Expr | str | int) -> pl.Expr:
    """A uniform in (0, 1) from ``keys``: (hash32(keys) + 0.5) / 2^32, Float64.

    The SQL twin is the macro ``uniform(k0, k1, k2, k3)``.
    """
    return (hash32(*keys).cast(pl.Float64) + 0.5) / TWO_32


def normal(*keys: pl.Expr | str | int) -> pl.Expr:
    """A standard normal by Box–Muller from the uniforms of (keys…, 0) and (keys…, 1).

    N = √(−2 ln u₀) · cos(2π u₁). With three keys this is the normal the ECE₀ simulation
    draws; SQL spells the same formula with two ``uniform`` calls.
    """
    u0, u1 = uniform(*keys, 0), uniform(*keys, 1)
    return (u0.log() * -2.0).sqrt() * (u1 * TAU).cos()


def mix32(x: pl.Expr) -> pl.Expr:
    """The finaliser: two xorshift-multiply rounds and a final xorshift on a 32-bit word."""
    x = _xorshift16(x) * MIX & MASK
    x = _xorshift16(x) * MIX & MASK
    return _xorshift16(x)


def _absorb(h: pl.Expr, word: pl.Expr) -> pl.Expr:
    return (h ^ word) * ABSORB & MASK


def _xorshift16(x: pl.Expr) -> pl.Expr:
    return (x // 65536) ^ x  # x >> 16 for 0 <= x < 2^32


def _as_int(key: pl.Expr | str | int) -> pl.Expr:
    if isinstance(key, bool):
        raise TypeError("a random key must be an integer, not a bool")
    if isinstance(key, int):
        return pl.lit(key, pl.Int64)
    return (pl.col(key) if isinstance(key, str) else key).cast(pl.Int64)
