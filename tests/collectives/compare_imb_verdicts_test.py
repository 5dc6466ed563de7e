#!/usr/bin/env python3
"""compare_imb.py's median interval and verdicts: which cells outside 0.95-1.05 are consistent
deviations and which are not told apart from noise. Argument: the path of compare_imb.py."""
import importlib.util
import math
import sys
import unittest

spec = importlib.util.spec_from_file_location("compare_imb", sys.argv.pop(1))
compare_imb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_imb)


class MedianInterval(unittest.TestCase):
    def test_order_statistics_follow_the_sign_test(self):
        # n=7: only the extremes give >= 90% (1 - 2/128); n=8: 2nd to 7th (1 - 18/256);
        # n=11: 3rd to 9th (1 - 2*67/2048).
        self.assertEqual(compare_imb.median_interval(range(7)), (0, 6))
        self.assertEqual(compare_imb.median_interval(range(8)), (1, 6))
        self.assertEqual(compare_imb.median_interval(range(11)), (2, 8))

    def test_too_few_values_give_no_interval(self):
        self.assertIsNone(compare_imb.median_interval([1.0, 1.1, 1.2, 1.3]))

    def test_the_interval_covers_the_median_as_often_as_stated(self):
        # Exact coverage for continuous noise: 1 - 2 P(B < k), at least the confidence.
        for n in range(5, 40):
            lo, hi = compare_imb.median_interval(range(n))
            k = lo + 1
            coverage = 1 - 2 * sum(math.comb(n, j) for j in range(k)) / 2 ** n
            self.assertGreaterEqual(coverage, compare_imb.MEDIAN_CONFIDENCE, n)
            wider = 1 - 2 * sum(math.comb(n, j) for j in range(k + 1)) / 2 ** n
            self.assertLess(wider, compare_imb.MEDIAN_CONFIDENCE, n)  # the narrowest such


class Verdicts(unittest.TestCase):
    def test_cells_are_split_by_whether_their_interval_reaches_the_band(self):
        cells = {
            ("Bcast", 8): (1.10, [1.06, 1.07, 1.10, 1.20, 1.30]),      # every repetition above
            ("Bcast", 16): (1.10, [0.90, 1.07, 1.10, 1.20, 1.30]),     # one repetition below
            ("Bcast", 32): (1.00, [0.5, 1.0, 1.0, 1.0, 2.0]),          # inside by its median
            ("Bcast", 64): (0.90, [0.89, 0.91]),                       # too few repetitions
            ("Bcast", 128): (0.90, [0.80, 0.85, 0.90, 0.92, 0.94]),    # every repetition below
        }
        consistent, unresolved = compare_imb.verdicts(cells)
        self.assertEqual([k for _, k, _ in consistent], [("Bcast", 8), ("Bcast", 128)])
        self.assertEqual([k for _, k, _ in unresolved], [("Bcast", 16), ("Bcast", 64)])
        self.assertEqual(consistent[0][2], (1.06, 1.30))
        self.assertIsNone(unresolved[1][2])


if __name__ == "__main__":
    unittest.main()
