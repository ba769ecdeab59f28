#!/usr/bin/env python3
"""Unit tests of scripts/stats.py, the one statistics module: summary,
spread, the median's interval, paired ratios and percentiles."""

import unittest

from testlib import main
import stats


class Summary(unittest.TestCase):
    def test_numbers_only(self):
        self.assertEqual(stats.summary([3, None, 1, "x", 2]), (2, 1, 3))

    def test_named_fields(self):
        s = stats.summary([4.0, 1.0])
        self.assertEqual((s.median, s.min, s.max), (2.5, 1.0, 4.0))

    def test_none_without_numbers(self):
        self.assertIsNone(stats.summary([None, True]))

    def test_median_low_index(self):
        self.assertEqual(stats.median_low_index([30.0, 10.0, 20.0]), 2)
        self.assertEqual(stats.median_low_index([40.0, 10.0, 30.0, 20.0]), 3)


class Spread(unittest.TestCase):
    def test_max_over_min(self):
        self.assertAlmostEqual(stats.spread([2.0, 3.0, 2.5]), 1.5)

    def test_undefined(self):
        self.assertIsNone(stats.spread([5]))
        self.assertIsNone(stats.spread([0, 3]))


class Interval(unittest.TestCase):
    def test_under_six_rounds(self):
        self.assertIsNone(stats.median_interval([1, 2, 3, 4, 5]))

    def test_six_rounds_is_min_max(self):
        self.assertEqual(stats.median_interval([6, 1, 5, 2, 4, 3]), (1, 6))

    def test_twelve_rounds(self):
        # P(X <= 2) of 12 flips = 0.0193 <= 0.025 < P(X <= 3): the 3rd and 10th
        self.assertEqual(stats.median_interval(range(1, 13)), (3, 10))

    def test_ranks(self):
        # the binomial ranks of the median's 95% interval (1-based), from
        # test_benchlib.py, whose module had its own copy
        for n, ranks in [(6, (1, 6)), (8, (1, 8)), (9, (2, 8)), (12, (3, 10)),
                         (16, (4, 13)), (20, (6, 15)), (30, (10, 21))]:
            self.assertEqual(stats.median_interval(list(range(n, 0, -1))), ranks, n)


class Ratios(unittest.TestCase):
    def test_paired(self):
        self.assertEqual(stats.paired_ratios([2, 6], [1, 3]), [2, 2])
        self.assertEqual(stats.paired_ratios([2], [1, 3]), [])
        self.assertEqual(stats.paired_ratios([2, 6], [0, 3]), [])

    def test_paired_differences(self):
        self.assertEqual(stats.paired_differences([3, 5], [1, 1]), [2, 4])
        self.assertEqual(stats.paired_differences([3, 5], [1]), [])
        self.assertEqual(stats.paired_differences([], []), [])

    def test_ratio_paired_median(self):
        self.assertEqual(stats.ratio([2, 9, 4], [1, 3, 4]), 2)

    def test_ratio_of_medians_when_unpaired(self):
        self.assertEqual(stats.ratio([2, 4, 6], [2, 2]), 2)
        self.assertIsNone(stats.ratio([], [1]))
        self.assertIsNone(stats.ratio([1], [0]))


class Percentile(unittest.TestCase):
    def test_nearest_rank(self):
        xs = list(range(1, 101))
        self.assertEqual(stats.percentile(xs, 0.5), 50)
        self.assertEqual(stats.percentile(xs, 0.99), 99)
        self.assertEqual(stats.percentile(xs, 0.0), 1)
        self.assertIsNone(stats.percentile([], 0.5))

    def test_histogram(self):
        hist = {10: 50, 20: 49, 30: 1}
        self.assertEqual(stats.hist_percentile(hist, 0.5), 10)
        self.assertEqual(stats.hist_percentile(hist, 0.99), 20)
        self.assertEqual(stats.hist_percentile(hist, 0.999), 30)
        self.assertIsNone(stats.hist_percentile({}, 0.5))


if __name__ == "__main__":
    main()
