"""The project's one statistics module: what every report says of rounds.

Words used the same way everywhere (compare, bench, bench-builds, the
timeline and their reports):

- summary: a figure's rounds as (median, min, max), Summary below;
- spread: max / min of the rounds (1.0 is no spread), None under two
  rounds or when the smallest is not above zero;
- interval: the rounds whose ranks bound the median at 95%, from the
  binomial count of rounds either side of it (no assumption about how the
  rounds are spread), None under six rounds;
- paired ratios: each round's own A / B, when A and B ran in every round
  (back to back, so they share the machine's speed of the moment); paired
  differences likewise, A - B;
- percentile: nearest rank, of a list of values or of a histogram.

Pure functions over numbers; nothing here runs anything.
"""

import collections
import math
import statistics

Summary = collections.namedtuple("Summary", "median min max")


def is_number(v):
    """True for an int or float that is not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def numbers(values):
    """Those of VALUES that are numbers (None and text dropped)."""
    return [v for v in values if is_number(v)]


def summary(values):
    """Summary(median, min, max) of those of VALUES that are numbers, or
    None when none is."""
    vs = numbers(values)
    if not vs:
        return None
    return Summary(statistics.median(vs), min(vs), max(vs))


def median_low_index(values):
    """The index in VALUES of the median (the lower middle one for an even
    number): which round stands for the others."""
    vs = list(values)
    return vs.index(statistics.median_low(vs))


def spread(values):
    """max / min of those of VALUES that are numbers; None under two of
    them or when the smallest is not above zero."""
    vs = numbers(values)
    if len(vs) < 2 or min(vs) <= 0:
        return None
    return max(vs) / min(vs)


def median_interval(values, level=0.95):
    """(low, high): the rounds whose ranks bound the median at LEVEL; None
    under six rounds (with so few, the interval is the whole range)."""
    xs = sorted(numbers(values))
    n = len(xs)
    if n < 6:
        return None
    tail, k = 0.0, 0
    # k: the largest with P(at most k-1 of n fair coin flips) <= (1-level)/2
    while True:
        tail += math.comb(n, k) / 2 ** n
        if tail > (1 - level) / 2:
            break
        k += 1
    return xs[k - 1], xs[n - k]


def paired_ratios(a, b):
    """Each round's A / B when A and B have the same number of rounds and
    no B is zero, else []."""
    a, b = list(a), list(b)
    if a and len(a) == len(b) and all(b):
        return [x / y for x, y in zip(a, b)]
    return []


def paired_differences(a, b):
    """Each round's A - B when A and B have the same number of rounds,
    else [] (what A costs beyond B, round by round: the engine's own CPU
    per I/O, fio's null engine's taken away)."""
    a, b = list(a), list(b)
    if a and len(a) == len(b):
        return [x - y for x, y in zip(a, b)]
    return []


def ratio(a, b):
    """A over B: the median of the paired ratios when there are any, else
    the ratio of the medians; None when either is empty or B's median is
    zero."""
    rs = paired_ratios(a, b)
    if rs:
        return statistics.median(rs)
    if not a or not b:
        return None
    mb = statistics.median(b)
    return statistics.median(a) / mb if mb else None


def percentile(values, q):
    """Nearest-rank percentile Q (0 to 1) of VALUES; None when empty."""
    xs = sorted(values)
    if not xs:
        return None
    return xs[max(1, math.ceil(q * len(xs))) - 1]


def hist_percentile(hist, q, total=None):
    """Nearest-rank percentile Q (0 to 1) of a histogram {key: count}: the
    smallest key whose running count reaches Q of TOTAL (default: the sum
    of the counts); None when it is empty. The caller maps the key to a
    value (a bucket's edge or middle)."""
    if total is None:
        total = sum(hist.values())
    if not total:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    keys = sorted(hist)
    for k in keys:
        seen += hist[k]
        if seen >= rank:
            return k
    return keys[-1]
