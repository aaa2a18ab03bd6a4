"""How far the text's cells' walk of words ANDed goes before it gives up
for the statement that scores every match (cells.best_rows): the more rows
the parts' words are held by, the more combinations it may cross."""

from plone.pgcatalog import cells
from plone.pgcatalog.schema import FREQUENCY_EDGES
from plone.pgcatalog.schema import LENGTH_EDGES
from plone.pgcatalog.schema import RARE_FREQUENCY

import unittest


ROW = (7, "/plone/f/d7")
"""The one row the statements find, once the walk has crossed enough."""


class WalkBudgetTest(unittest.TestCase):
    def walk(self, df: int, found_after: int | None = None) -> tuple[list | None, int]:
        """best_rows of ``alpha AND beta``, each held by *df* rows, where no
        combination holds a row until *found_after* have been crossed; and
        the combinations crossed."""
        crossed = 0

        def read(sql: str, params: list) -> list[tuple]:
            nonlocal crossed
            if "AS k(key, i)" not in sql:  # (the rows read first: none)
                return []
            crossed += len(params[0])
            if found_after is not None and crossed > found_after:
                return [(1, 10**9, *ROW)]  # (a score past every bound: the page is full)
            return []

        def lengths(words):
            # each word at every frequency class from the shortest length class
            return [(1,) * FREQUENCY_EDGES.index(RARE_FREQUENCY) for _ in words]

        best = cells.best_rows(
            read, (("alpha",), ("beta",)), "true", [], 1_000_000.0, 50_000_000.0, [df, df], 1, lengths
        )
        return best, crossed

    def test_few_rows_give_up_at_the_least(self):
        best, crossed = self.walk(10_000)
        self.assertIsNone(best)
        self.assertLessEqual(crossed, cells.MAX_COMBINATIONS)

    def test_many_rows_walk_further(self):
        df = 200_000  # (may cross 8,000: scoring their matches would take longer)
        best, crossed = self.walk(df)
        self.assertIsNone(best)
        self.assertGreater(crossed, 2 * cells.MAX_COMBINATIONS)
        self.assertLessEqual(crossed, df // cells.COMBINATION_ROWS)
        # an answer past the least budget is found where the rows are many
        best, _ = self.walk(df, found_after=2_000)
        self.assertEqual(best, [(*ROW, 10**9)])
        best, _ = self.walk(10_000, found_after=2_000)
        self.assertIsNone(best)


class AddedBoundsTest(unittest.TestCase):
    """A length class's addition (the best of a part tested there) keeps
    the combinations best bound first, each its own bound plus it."""

    def test_in_order_with_what_each_length_class_adds(self):
        meandoclen, idfs = 120.0, [900.0, 1400.0]
        classes = FREQUENCY_EDGES.index(RARE_FREQUENCY)
        lengths = [tuple(min(fb, 6) for fb in range(1, classes + 1)), (2,) * classes]
        plain = {(lb, fbs): bound for bound, lb, fbs in cells.combination_bounds(meandoclen, idfs, lengths)}
        tested = (3,) * classes
        added = [cells.best_held(meandoclen, 700.0, tested, lb) for lb in range(len(LENGTH_EDGES) + 1)]
        self.assertEqual(added[:3], [0, 0, 0])  # (not held short of length class 3)
        self.assertGreater(added[3], added[-1])  # (longer rows score less)
        walked = list(cells.combination_bounds(meandoclen, idfs, lengths, added))
        bounds = [bound for bound, _, _ in walked]
        self.assertEqual(bounds, sorted(bounds, reverse=True))
        self.assertEqual({(lb, fbs): bound - added[lb] for bound, lb, fbs in walked}, plain)
