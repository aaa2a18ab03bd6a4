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
        keep_committed, zoids, removed, records = params
        self.assertTrue(keep_committed)
        self.assertEqual((zoids, removed), ('{"3","4"}', '{"/plone/c"}'))
        full, partial = orjson.loads(records)
        self.assertEqual(full["idx"], {"Title": "A"})  # no nulls in a full row
        self.assertEqual(partial["idx"], {"Title": None})  # a null removes the committed key
        self.assertNotIn("meta", full)  # metadata is laid over in Python
        self.assertEqual(pending_metadata(pending, [3, 4, 5]), {3: {"Title": "A"}})

    def test_clear_all_drops_every_committed_row(self):
        pending = Pending()
        pending.clear()
        self.assertFalse(catalog_sql("SELECT 1", pending)[1][0])

    def test_cleared_index_leaves_committed_rows(self):
        pending = Pending()
        pending.clear_index("Title", None)
        sql, params = catalog_sql("SELECT 1", pending)
        self.assertIn("(o.idx - ARRAY['Title']) AS idx", sql)
        self.assertEqual(len(params), 4)
