"""ExtendedPathIndex queries → SQL over the path columns."""

from plone.pgcatalog.paths import path_condition
from plone.pgcatalog.paths import PathQueryError

import unittest


CATALOG = ("", "plone", "portal_catalog")


class PathTest(unittest.TestCase):
    def test_subtree(self):
        sql, params, narrow = path_condition(["/plone/f"], {}, CATALOG)
        self.assertIn("/plone/f", params)
        self.assertFalse(narrow)

    def test_children_are_narrow(self):
        sql, params, narrow = path_condition(["/plone/f"], {"depth": 1}, CATALOG)
        self.assertTrue(narrow)
        self.assertIn("parent_path", sql)

    def test_object_itself(self):
        sql, params, narrow = path_condition(["/plone/f"], {"depth": 0}, CATALOG)
        self.assertTrue(narrow)
        self.assertEqual(params, ["/plone/f"])

    def test_several_paths_or_and(self):
        either = path_condition(["/plone/a", "/plone/b"], {"depth": 0}, CATALOG)[0]
        both = path_condition(["/plone/a", "/plone/b"], {"depth": 0, "operator": "and"}, CATALOG)[0]
        self.assertIn(" OR ", either)
        self.assertIn(" AND ", both)

    def test_odd_options_fail_as_zcatalog(self):
        with self.assertRaises((PathQueryError, TypeError, ValueError)):
            path_condition(["/plone"], {"depth": "deep"}, CATALOG)
