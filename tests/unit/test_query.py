"""The query builder: ZCatalog query dicts → one parameterised statement."""

from dataclasses import replace
from DateTime import DateTime
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

    def test_security_clauses_filter_what_others_find(self):
        """Plone's security clauses hold for most items: behind another
        index's clause they are filters (inside COALESCE no index serves
        them), alone they lead."""
        security = {
            "allowedRolesAndUsers": ["Anonymous", "Manager"],
            "effectiveRange": DateTime("2024/01/01"),
        }
        defs = {**INDEXES, "allowedRolesAndUsers": r.IndexDef("allowedRolesAndUsers", r.KEYWORD)}
        stmt = build(canonical({"Subject": "a", **security}), defs, {}, ())
        self.assertEqual(stmt.where[0], "((idx->'Subject') @> %s::jsonb)")
        self.assertTrue(all(w.startswith("(COALESCE(") or w.startswith("COALESCE(") for w in stmt.where[1:]))
        alone = build(canonical(security), defs, {}, ())
        self.assertFalse(alone.where[0].startswith("COALESCE("))  # the first leads
        self.assertTrue(alone.where[1].startswith("(COALESCE("))

    def test_hot_keys_read_typed_columns(self):
        """With the typed columns filled (a tool's ``_pgc_typed``) the hot
        keys read them; a type's query is covered (counted off the
        covering index); an index defined otherwise reads idx."""
        typed = {name: replace(index, typed=True) for name, index in INDEXES.items()}
        stmt = build(canonical({"portal_type": "Document", "effectiveRange": DateTime()}), typed, {}, ())
        self.assertEqual(stmt.where[0], "portal_type = %s::text")
        self.assertIn("COALESCE(effective_start <= %s AND effective_end >= %s, false)", stmt.where[1])
        self.assertTrue(stmt.covered)
        self.assertFalse(compiled({"portal_type": "Document"}).covered)  # not typed: idx
        numeric = replace(typed["portal_type"], options={"value_type": r.JSON_VALUE})
        self.assertIsNone(numeric.hot)
        self.assertEqual(numeric.expression(), "(idx->'portal_type')")
        self.assertEqual(r.IndexDef("Subject", r.KEYWORD, typed=True).expression(), "(idx->'Subject')")

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
        where = list(stmt.where)
        ordering = add_sort(stmt, spec)
        self.assertEqual(stmt.where, where)  # the statement stays as it was
        self.assertTrue(ordering.terms[0].endswith("DESC"))
        self.assertEqual(ordering.tiebreak, "zoid DESC")
        self.assertEqual(ordering.order_sql(), f"{ordering.terms[0]}, zoid DESC")
        created = INDEXES["created"].expression()
        self.assertEqual(ordering.keyed, (f"{created} IS NOT NULL",))
        self.assertTrue(ordering.where_sql(stmt).endswith(f" AND {created} IS NOT NULL"))
        self.assertTrue(ordering.walks(20))
        self.assertFalse(add_sort(compiled({"UID": "x"}), spec).walks(20))  # a UID: the plain plan


class MergeQueryTest(unittest.TestCase):
    def test_keywords_win_and_requests_are_ignored(self):
        class Request:
            form = {"portal_type": "Image"}

        self.assertEqual(merge_query({"a": 1, "b": 2}, b=3), {"a": 1, "b": 3})
        self.assertEqual(merge_query(Request(), a=1), {"a": 1})
