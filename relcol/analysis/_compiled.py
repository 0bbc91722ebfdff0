"""The monitoring permutation test's shuffles, the trends' ranks of short rows and the
bootstrap's weights and blocks of samples, compiled with numba.

Each permutation of the stratified test shuffles every bin's units and gives the baseline
the first of them. In numpy that is ``Generator.permuted`` over a (permutations × units)
array of indices and a gather of the baseline's units from it: three passes and two arrays
as large as the draws, for a loop that needs one index array and two running sums. Here
the same Fisher–Yates shuffle runs on the generator's own bit stream, drawing exactly what
``Generator.permuted`` draws (``random_interval``: the smallest bit mask covering the
bound, 32-bit draws rejected above it), so a seed gives the p-values of the numpy form.

``mid_ranks`` ranks each row of a (rows × n) array, ties at their mid-rank, as
``scipy.stats.rankdata(axis=1)`` does by sorting each row; for the few severities of a curve
counting, for each value, the values below it and equal to it is several times faster.

``add_rows`` adds each row's weights to its key's counts, the bootstrap's level counts of a
block of samples: 1.6–2.0 ms for 4 190 rows × 1001 weights, where scipy's sparse product took
1.9 ms when the rows had few keys and 12.6 ms when they had thousands.

``poisson_block`` draws the bootstrap's Poisson weights, one hash per sample and replicate
counted against the thresholds of the Poisson(1) CDF, in one pass over the block: in numpy
that was ten passes over an array of hashes and twelve over its comparisons.

``first_row_order`` orders a large test set's samples by their first row in one pass, where
numpy took ``np.minimum.at`` and a sort.

Imported on first use, so importing ``relcol.analysis`` does not import numba; compiled
once and cached beside this file.
"""

from __future__ import annotations

import numba
import numpy as np

from relcol._interrupts import held_while_compiling


@numba.njit(cache=True, error_model="numpy")
def _interval(bound, next_uint32, state):
    """A uniform integer in [0, bound] (bound < 2³²), as numpy's ``random_interval``."""
    if bound == 0:
        return 0
    mask = bound
    mask |= mask >> 1
    mask |= mask >> 2
    mask |= mask >> 4
    mask |= mask >> 8
    mask |= mask >> 16
    while True:
        value = next_uint32(state) & mask
        if value <= bound:
            return value


@held_while_compiling
@numba.njit(cache=True, error_model="numpy")
def _baseline_sums(n, residual, starts, ends, base_count, mixed, size, next_uint32, state):
    """For every bin ``b`` of ``mixed`` in turn, then each of ``size`` permutations: the
    bin's units ``starts[b]:ends[b]`` put in the order of one ``Generator.permuted`` row
    (indices 0 … k−1, swapped from the last down), and the sums of ``n`` and ``residual``
    over the first ``base_count[b]`` of them: two (size × len(mixed)) arrays."""
    sum_n = np.empty((size, len(mixed)))
    sum_r = np.empty((size, len(mixed)))
    for column in range(len(mixed)):
        b = mixed[column]
        start = starts[b]
        k = ends[b] - start
        chosen = base_count[b]
        order = np.empty(k, np.int64)
        for p in range(size):
            for i in range(k):
                order[i] = i
            for i in range(k - 1, 0, -1):
                j = _interval(i, next_uint32, state)
                order[i], order[j] = order[j], order[i]
            total_n = 0.0
            total_r = 0.0
            for i in range(chosen):
                total_n += n[start + order[i]]
                total_r += residual[start + order[i]]
            sum_n[p, column] = total_n
            sum_r[p, column] = total_r
    return sum_n, sum_r


def baseline_sums(n, residual, starts, ends, base_count, mixed, size, rng: np.random.Generator):
    """``_baseline_sums`` drawing from ``rng``'s bit generator (holding its lock, as numpy's
    own methods do), so that ``rng`` is left where ``Generator.permuted`` would leave it."""
    bits = rng.bit_generator
    with bits.lock:
        return _baseline_sums(
            n,
            residual,
            starts,
            ends,
            base_count,
            np.asarray(mixed, dtype=np.int64),
            size,
            bits.ctypes.next_uint32,
            bits.ctypes.state_address,
        )


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def mid_ranks(values):
    """The rank of each value within its row of ``values`` (rows × n, no NaN), from 1, ties
    at their mid-rank: #{below} + (#{equal} + 1)/2, a multiple of ½ and exact. O(n²) per
    row: for short rows."""
    rows, n = values.shape
    out = np.empty((rows, n))
    for r in range(rows):
        for i in range(n):
            value = values[r, i]
            below = 0
            equal = 0
            for j in range(n):
                other = values[r, j]
                if other < value:
                    below += 1
                elif other == value:
                    equal += 1
            out[r, i] = below + (equal + 1) / 2
    return out


_HALF = np.uint32(16)


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def poisson_block(low, high, replicate_keys, absorb, mix, thresholds, out):
    """The bootstrap's weights of a block of samples: ``out[i]`` is 1 (the point estimates'
    unit weight), then for each replicate b the number of ``thresholds`` that
    hash32(stream, seed, b, sample i) reaches, for each sample's low and high 32-bit words
    (``low``, ``high``) and each replicate's key (``replicate_keys``: the hash state after
    stream, seed and b). ``out`` is (samples × (1 + B)) of any numeric dtype: uint8 held,
    or the Float64 a product multiplies, written with no second pass.

    The hash's last steps as ``relcol.metrics.uniform`` and the SQL macro take them: absorb
    each word (XOR, times ``absorb``), then three rounds of XOR with the word shifted right by
    16, the first two times ``mix``. Those take each product masked to 32 bits, which is the
    product of 32-bit words wrapped: the same bits in half the width, so twice the hashes per
    vector instruction. A sample's hashes go to a row of 32-bit words, then each threshold is
    counted over the row into 32-bit counts: two loops that vectorise, 3× faster than
    counting the thresholds of each hash in turn. In 64-bit words, with counts of 8 bits
    (which do not share a vector's lanes with the hashes), it took twice as long: 7.9 ms
    against 3.7 ms for 4 190 samples × 1000 replicates on one core."""
    keys = replicate_keys.astype(np.uint32)
    absorb, mix = np.uint32(absorb), np.uint32(mix)
    reached = thresholds.astype(np.uint32)
    hashes = np.empty(len(keys), dtype=np.uint32)
    counts = np.empty(len(keys), dtype=np.uint32)  # the width of the hashes: one vector
    for i in range(len(low)):
        lo, hi = np.uint32(low[i]), np.uint32(high[i])
        for b in range(len(keys)):
            x = np.uint32(np.uint32(lo ^ keys[b]) * absorb)
            x = np.uint32(np.uint32(x ^ hi) * absorb)
            x = np.uint32(np.uint32(x ^ np.uint32(x >> _HALF)) * mix)
            x = np.uint32(np.uint32(x ^ np.uint32(x >> _HALF)) * mix)
            hashes[b] = x ^ np.uint32(x >> _HALF)
        counts[:] = 0
        for threshold in reached:
            for b in range(len(hashes)):
                counts[b] += np.uint32(hashes[b] >= threshold)
        row = out[i]
        row[0] = 1
        for b in range(len(counts)):
            row[b + 1] = counts[b]


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def add_rows(counts, keys, samples, weights):
    """``counts[keys[i]] += weights[samples[i]]`` for each row i, in order: the product H·W of
    the rows' one-hot ``keys`` with the weights (samples × columns), added to ``counts``
    (keys × columns, Float64) with no array of H; exact for integer weights below 2⁵³."""
    for i in range(len(keys)):
        total, row = counts[keys[i]], weights[samples[i]]
        for b in range(len(row)):
            total[b] += row[b]


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def first_row_order(sample, n_samples):
    """The samples (0 … ``n_samples`` − 1) in the order of their first row in ``sample`` (each
    row's sample), those without a row after them in order; each row's sample's place in
    that order; and the count of samples with a row. What ``np.minimum.at`` and a stable
    argsort gave, in O(rows); ``relcol.metrics.rows_by_key`` then groups the rows by place."""
    place = np.full(n_samples, -1, dtype=np.int64)
    order = np.empty(n_samples, dtype=np.int64)
    seen = 0
    for s in sample:
        if place[s] < 0:
            place[s] = seen
            order[seen] = s
            seen += 1
    after = seen
    for s in range(n_samples):
        if place[s] < 0:
            place[s] = after
            order[after] = s
            after += 1
    row_place = np.empty(len(sample), dtype=np.int64)
    for i in range(len(sample)):
        row_place[i] = place[sample[i]]
    return order, row_place, seen
