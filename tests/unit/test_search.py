"""Batches and sort limits, read as ZCatalog reads them."""

from plone.pgcatalog.search import _batch
from plone.pgcatalog.search import _bounded
from plone.pgcatalog.search import _window_from_end

import unittest


class BatchTest(unittest.TestCase):
    def test_batch_and_limit(self):
        self.assertEqual(_batch({}), (0, None, None))
        self.assertEqual(_batch({"b_start": "20", "b_size": 10}), (20, 10, 30))
        self.assertEqual(_batch({"sort_limit": 5}), (0, 5, 5))
        self.assertEqual(_batch({"sort_limit": -5}), (0, None, None))  # 0 or below: no limit
        self.assertEqual(_batch({"b_size": 3, "sort_limit": 5}), (0, 3, 3))  # b_size wins

    def test_zcatalogs_errors(self):
        with self.assertRaises(ValueError):
            _batch({"b_start": "first"})
        with self.assertRaises(TypeError):
            _batch({"sort_limit": "5"})

    def test_windows_from_the_end(self):
        # 10 matches, all with a sort key: the last page as counted forwards
        self.assertEqual(_window_from_end(8, 5, 10, 10), (8, 2))
        self.assertEqual(_window_from_end(6, 2, 10, 10), (6, 2))
        # 2 of 10 matches lack the sort key: ZCatalog's window moves back by 2
        self.assertEqual(_window_from_end(6, 2, 10, 8), (4, 2))
        self.assertEqual(_window_from_end(12, 2, 10, 10), (0, 0))

    def test_huge_numbers_stay_python_until_sql(self):
        self.assertEqual(_bounded(2**80), 2**40)
        self.assertEqual(_bounded(7), 7)


class EffectiveRangeTest(unittest.TestCase):
    """Plone's effective range term: now, as DateRangeIndex counts it."""

    def test_one_date_per_minute(self):
        from DateTime import DateTime
        from plone.pgcatalog import tool
        from plone.pgcatalog.values import range_minutes
        from unittest import mock

        start = 29_916_667 * 60.0  # a minute's first second
        for now in (start - 0.001, start, start + 59.999):
            with mock.patch.object(tool.time, "time", return_value=now):
                first = tool.this_minute()
                self.assertIs(tool.this_minute(), first)
            # the minute DateRangeIndex compares of a DateTime() made then
            self.assertEqual(range_minutes(first), range_minutes(DateTime(now)))
        with mock.patch.object(tool.time, "time", return_value=start + 30):
            self.assertIs(tool.this_minute(), first)  # the same minute as the last
        with mock.patch.object(tool.time, "time", return_value=start + 60):
            self.assertEqual(range_minutes(tool.this_minute()), range_minutes(first) + 1)
