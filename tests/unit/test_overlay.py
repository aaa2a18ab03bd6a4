"""Read-your-writes SQL: what a search reads inside a transaction."""

from plone.pgcatalog.overlay import catalog_sql
from plone.pgcatalog.overlay import has_changes
from plone.pgcatalog.overlay import pending_metadata
from plone.pgcatalog.pending import Pending
from plone.pgcatalog.row import CatalogRow

import orjson
import unittest


class OverlayTest(unittest.TestCase):
    def test_nothing_pending_reads_the_table(self):
        for pending in (None, Pending()):
            sql, params = catalog_sql("SELECT zoid FROM pgcatalog_rows AS object_state", pending)
            self.assertEqual(params, [])
            self.assertTrue(
                sql.startswith("WITH pgcatalog_rows AS NOT MATERIALIZED (SELECT * FROM object_state)")
            )
        self.assertFalse(has_changes(Pending()))

    def test_statements_with_their_own_ctes_join_the_head(self):
        sql, _ = catalog_sql("WITH x AS (SELECT 1) SELECT * FROM x", None)
        self.assertIn("(SELECT * FROM object_state),\nx AS (SELECT 1)", sql)

    def test_pending_rows_come_as_one_json_parameter(self):
        pending = Pending()
        pending.catalog(3, CatalogRow("/plone/a", idx={"Title": "A", "gone": None}, meta={"Title": "A"}))
        pending.catalog(4, CatalogRow("/plone/b", idx={"Title": None}, partial=True))
        pending.uncatalog("/plone/c")
        sql, params = catalog_sql("SELECT 1", pending)
        emptied, _, zoids, removed, records = params
        self.assertIsNone(emptied)
        self.assertEqual((zoids, removed), ('{"3","4"}', '{"/plone/c"}'))
        full, partial = orjson.loads(records)
        self.assertEqual(full["idx"], {"Title": "A"})  # no nulls in a full row
        self.assertEqual(partial["idx"], {"Title": None})  # a null removes the committed key
        self.assertNotIn("meta", full)  # metadata is laid over in Python
        self.assertEqual(pending_metadata(pending, [3, 4, 5]), {3: {"Title": "A"}})

    def test_clearing_drops_the_sites_committed_rows(self):
        pending = Pending()
        pending.catalog(3, CatalogRow("/plone/a"))
        self.assertIsNone(catalog_sql("SELECT 1", pending)[1][0])
        pending.clear("/plone")
        sql, params = catalog_sql("SELECT 1", pending)
        self.assertIn("NOT starts_with(o.path || '/', %s::text)", sql)
        self.assertEqual(params[:2], ["/plone/", "/plone/"])  # /plone and below, not /plone2
        self.assertEqual(pending.rows, {})

    def test_cleared_index_leaves_committed_rows(self):
        pending = Pending()
        pending.clear_index("Title", None)
        sql, params = catalog_sql("SELECT 1", pending)
        self.assertIn("(o.idx - ARRAY['Title']) AS idx", sql)
        self.assertEqual(len(params), 5)


class SiteScopeTest(unittest.TestCase):
    """Each site's catalog reads its own rows: several sites may share a
    database."""

    def test_committed_rows_of_the_site(self):
        sql, params = catalog_sql("SELECT 1", None, "/plone")
        # not /plone2, not /plone-x; literals, so that the planner knows
        self.assertIn(
            "WHERE COALESCE(path = '/plone' OR (path >= '/plone/' AND path < '/plone0'), false)", sql
        )
        self.assertEqual(params, [])
        sql, _ = catalog_sql("SELECT 1", None, "/it's")
        self.assertIn("path = '/it''s'", sql)

    def test_pending_rows_of_the_site(self):
        pending = Pending()
        pending.catalog(3, CatalogRow("/plone/a"))
        sql, params = catalog_sql("SELECT 1", pending, "/plone")
        self.assertIn(
            "COALESCE(o.path = '/plone' OR (o.path >= '/plone/' AND o.path < '/plone0'), false)", sql
        )
        self.assertIn("WHERE starts_with(p.path || '/', '/plone/')", sql)
        self.assertEqual(sql.count("%s"), len(params))
