"""Compiled statements kept for the queries a site asks again (query.cache)."""

from datetime import datetime
from DateTime import DateTime
from plone.pgcatalog import registry as r
from plone.pgcatalog.query import build
from plone.pgcatalog.query import canonical
from plone.pgcatalog.query import Fault
from plone.pgcatalog.query.cache import compiled
from plone.pgcatalog.query.cache import query_key
from plone.pgcatalog.query.cache import SIZE
from unit.test_query import INDEXES as QUERY_INDEXES

import unittest


# the query builder's tests' indexes, and Plone's security terms
INDEXES = {**QUERY_INDEXES, "allowedRolesAndUsers": r.IndexDef("allowedRolesAndUsers", r.KEYWORD)}
PATH = ("", "plone", "portal_catalog")


class Tool:
    """What the cache needs of a catalog tool: a ``__dict__``."""


def statement(tool, query, indexes=INDEXES, lexicons=None):
    """The statement of *query* built or kept by *tool* (as ``search``
    asks: the query as given)."""
    lexicons = lexicons or {}

    def make(lexicons):
        return build(canonical(query), indexes, lexicons, PATH)

    return compiled(tool, query, indexes, lambda: lexicons, PATH, make)


class CompiledTest(unittest.TestCase):
    def test_a_query_asked_again_gets_the_statement_built_before(self):
        tool = Tool()
        query = {"portal_type": "Document", "Subject": ["a", "b"], "sort_on": "created"}
        first = statement(tool, query)
        self.assertIs(statement(tool, dict(query)), first)
        self.assertIs(statement(tool, {**query, "Subject": ("a", "b")}), first)  # a tuple is read as a list
        reordered = statement(tool, {**query, "Subject": ["b", "a"]})  # kept apart, compiled alike
        self.assertIsNot(reordered, first)
        self.assertEqual((reordered.where_sql(), reordered.params), (first.where_sql(), first.params))
        self.assertIsNot(statement(tool, {**query, "Subject": ["a", "c"]}), first)
        self.assertIsNot(statement(Tool(), query), first)  # each tool (and connection) its own

    def test_plones_effective_range_is_kept_for_its_minute(self):
        tool = Tool()
        query = {"portal_type": "Document", "allowedRolesAndUsers": {"query": ["Anonymous"]}}
        now = DateTime("2026/11/27 10:15:05 UTC")
        first = statement(tool, {**query, "effectiveRange": now})
        same_minute = statement(tool, {**query, "effectiveRange": DateTime("2026/11/27 11:15:59 GMT+1")})
        self.assertIs(same_minute, first)
        next_minute = statement(tool, {**query, "effectiveRange": DateTime("2026/11/27 10:16:00 UTC")})
        self.assertIsNot(next_minute, first)
        self.assertNotEqual(next_minute.params, first.params)
        # before 1970 DateIndex counts minutes down, DateRangeIndex towards zero
        self.assertNotEqual(
            query_key({"created": DateTime("1969/12/31 23:59:00 UTC")}, INDEXES),
            query_key({"created": DateTime("1969/12/31 23:59:30 UTC")}, INDEXES),
        )

    def test_values_equal_in_python_and_not_in_sql_are_kept_apart(self):
        tool = Tool()
        for one, other in (
            ({"is_folderish": True}, {"is_folderish": 1}),
            ({"portal_type": 1}, {"portal_type": 1.0}),
            ({"portal_type": "a"}, {"portal_type": ["a"]}),
            ({"created": {"query": DateTime("2026/01/01"), "range": "min"}},
             {"created": {"query": DateTime("2026/01/01"), "range": "max"}}),
            ({"path": "/plone/a"}, {"path": {"query": "/plone/a", "depth": 1}}),
            ({"path": "/plone/a", "path_depth": 0}, {"path": "/plone/a"}),
        ):
            self.assertNotEqual(query_key(canonical(one), INDEXES), query_key(canonical(other), INDEXES))
            self.assertIsNot(statement(tool, one), statement(tool, other))

    def test_values_without_a_dependable_key_compile_every_time(self):
        for query in (
            {"portal_type": DateTime()},  # a field index compares the date whole
            {"created": datetime(2026, 1, 1)},  # naive or not: DateIndex decides
            {"portal_type": object()},
            {"Subject": [{"unhashable"}]},
        ):
            self.assertIsNone(query_key(query, INDEXES), query)
        tool = Tool()
        query = {"created": datetime(2026, 1, 1)}
        self.assertIsNot(statement(tool, query), statement(tool, query))

    def test_faults_are_raised_every_time(self):
        tool = Tool()
        for _ in range(2):
            with self.assertRaises(Fault):
                statement(tool, {"portal_type": {"query": "a", "range": "nonsense", "bad_option": 1}})

    def test_new_index_definitions_drop_what_was_kept(self):
        tool = Tool()
        query = {"portal_type": "Document"}
        first = statement(tool, query)
        changed = {**INDEXES, "Title": r.IndexDef("Title", r.FIELD)}
        self.assertIsNot(statement(tool, query, changed), first)
        self.assertIs(tool.__dict__["_v_statements"][0], changed)

    def test_a_new_catalog_path_drops_what_was_kept(self):
        tool = Tool()
        query = {"portal_type": "Document"}
        first = statement(tool, query)
        moved = compiled(tool, query, INDEXES, dict, ("", "other", "portal_catalog"), lambda lexicons: object())
        self.assertIsNot(moved, first)
        self.assertIsNot(statement(tool, query), first)

    def test_the_least_recently_used_go_first(self):
        tool = Tool()
        first = statement(tool, {"portal_type": "first"})
        zero = statement(tool, {"portal_type": "type 0"})
        for number in range(1, SIZE):
            statement(tool, {"portal_type": f"type {number}"})
            if number == SIZE // 2:
                self.assertIs(statement(tool, {"portal_type": "first"}), first)  # used again
        self.assertEqual(len(tool.__dict__["_v_statements"][2]), SIZE)
        self.assertIs(statement(tool, {"portal_type": "first"}), first)
        self.assertIsNot(statement(tool, {"portal_type": "type 0"}), zero)


class LexiconTest(unittest.TestCase):
    def test_a_text_query_is_kept_for_its_lexicons_pipeline(self):
        from plone.pgcatalog.lexicon import Lexicon
        from Products.ZCTextIndex.Lexicon import CaseNormalizer
        from Products.ZCTextIndex.Lexicon import Splitter

        indexes = {**INDEXES, "SearchableText": r.IndexDef("SearchableText", r.TEXT, options={"lexicon_id": "lex"})}
        lexicon = Lexicon("lex", "", Splitter(), CaseNormalizer())
        tool, query = Tool(), {"SearchableText": "Word"}
        asked = []

        def lexicons():
            asked.append(1)
            return {"lex": lexicon}

        def kept():
            return compiled(tool, query, indexes, lexicons, PATH, lambda found: build(query, indexes, found, PATH))

        first = kept()
        self.assertIs(kept(), first)
        self.assertEqual(len(asked), 2)  # the hit checks the pipeline
        lexicon._pipeline = (Splitter(),)  # set_pipeline: words keep their case now
        other = kept()
        self.assertIsNot(other, first)
        self.assertNotEqual(other.params, first.params)
        self.assertIs(kept(), other)
        # a query on no text index never asks for the lexicons
        asked.clear()
        for _ in range(2):
            compiled(tool, {"portal_type": "a"}, indexes, lexicons, PATH, lambda found: build({"portal_type": "a"}, indexes, found, PATH))
        self.assertEqual(asked, [])
