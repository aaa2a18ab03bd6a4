"""The query builder: ZCatalog query dicts → one parameterised statement."""

from plone.pgcatalog import registry as r
from plone.pgcatalog.query import add_sort
from plone.pgcatalog.query import build
from plone.pgcatalog.query import canonical
from plone.pgcatalog.query import Fault
from plone.pgcatalog.query import merge_query
from plone.pgcatalog.query import sort_spec
from Products.ZCatalog.ZCatalog import CatalogError

import unittest


INDEXES = {
    index.name: index
    for index in (
        r.IndexDef("portal_type", r.FIELD),
        r.IndexDef("Subject", r.KEYWORD),
        r.IndexDef("created", r.DATE),
        r.IndexDef("is_folderish", r.BOOLEAN),
        r.IndexDef("UID", r.UUID),
        r.IndexDef("path", r.PATH),
        r.IndexDef("getObjPositionInParent", r.GOPIP),
        r.IndexDef(
            "effectiveRange", r.DATE_RANGE, options={"since_field": "effective", "until_field": "expires"}
        ),
    )
}

HOSTILE = "x'); DROP TABLE object_state; --"


def compiled(query):
    return build(canonical(query), INDEXES, {}, ("", "plone", "portal_catalog"))


class BuildTest(unittest.TestCase):
    def test_values_are_parameters_never_sql(self):
        for query in (
            {"portal_type": HOSTILE},
            {"Subject": [HOSTILE, "b"]},
            {"UID": HOSTILE},
            {"path": "/plone/" + HOSTILE},
            {"portal_type": {"query": [HOSTILE], "not": HOSTILE + "2"}},
        ):
            stmt = compiled(query)
            self.assertNotIn("DROP", stmt.where_sql())
            self.assertTrue(any(HOSTILE in str(p) for p in stmt.params), query)

    def test_no_index_named_finds_nothing(self):
        self.assertIsNone(compiled({"no_such_index": "x", "sort_on": "portal_type"}))

    def test_none_and_empty_values_find_nothing(self):
        # ZCatalog: a None value matches nothing, a gopip filter answers nothing
        self.assertIsNone(compiled({"portal_type": None}))
        self.assertIsNone(compiled({"getObjPositionInParent": 3}))

    def test_parts_are_anded(self):
        stmt = compiled({"portal_type": "Document", "is_folderish": True})
        self.assertEqual(len(stmt.where), 2)
        self.assertIn("Document", stmt.params)  # one key: an equality
        self.assertIn("= %s::text", stmt.where_sql())
        several = compiled({"portal_type": ["Document", "Event"]})
        self.assertIn('{"Document","Event"}', several.params)  # an array parameter

    def test_bad_range_is_zcatalogs_type_error(self):
        with self.assertRaises(Fault) as raised:
            compiled({"portal_type": {"query": "a", "range": 1}})
        self.assertIsInstance(raised.exception.error, TypeError)


class SortTest(unittest.TestCase):
    def test_unknown_sort_index_is_a_catalog_error(self):
        with self.assertRaises(CatalogError):
            sort_spec({"sort_on": "nope"}, INDEXES)

    def test_sort_keys_and_tiebreak_follow_the_order(self):
        spec = sort_spec({"sort_on": "created", "sort_order": "reverse"}, INDEXES)
        self.assertEqual([(index.name, reverse) for index, reverse in spec], [("created", True)])
        stmt = compiled({"portal_type": "Document"})
        add_sort(stmt, spec)
        self.assertTrue(stmt.order[0].endswith("DESC"))
        self.assertEqual(stmt.tiebreak, "zoid DESC")


class MergeQueryTest(unittest.TestCase):
    def test_keywords_win_and_requests_are_ignored(self):
        class Request:
            form = {"portal_type": "Image"}

        self.assertEqual(merge_query({"a": 1, "b": 2}, b=3), {"a": 1, "b": 3})
        self.assertEqual(merge_query(Request(), a=1), {"a": 1})
