"""The catalog row: one column table, one merge rule, every user follows."""

from plone.pgcatalog import overlay
from plone.pgcatalog import processor
from plone.pgcatalog import registry
from plone.pgcatalog import row
from plone.pgcatalog import schema
from plone.pgcatalog.pending import Pending
from plone.pgcatalog.row import CatalogRow
from plone.pgcatalog.row import Column
from plone.pgcatalog.row import Merge
from unittest import mock

import orjson
import unittest


class MergeTest(unittest.TestCase):
    def full(self):
        return CatalogRow(
            "/plone/a",
            idx={"Title": "A", "Subject": ["x"]},
            word_counts={"Title": [1, {"a": 1}]},
            meta={"Title": "A"},
            own={"searchable_text": "'a':1", "object_provides": ["I"]},
        )

    def test_partial_over_full_keeps_what_it_does_not_carry(self):
        later = CatalogRow("/plone/a", idx={"Title": "B", "Subject": None}, partial=True)
        merged = self.full().merged(later)
        self.assertFalse(merged.partial)  # still a full row: written whole
        self.assertEqual(merged.idx, {"Title": "B", "Subject": None})
        self.assertEqual(merged.meta, {"Title": "A"})
        self.assertEqual(merged.own, {"searchable_text": "'a':1", "object_provides": ["I"]})
        # a full row is written without the nulls a partial row carried
        self.assertEqual(orjson.loads(row.sql_params(merged)["idx"]), {"Title": "B"})

    def test_full_row_replaces(self):
        later = CatalogRow("/plone/b", idx={"Title": "C"})
        self.assertIs(self.full().merged(later), later)

    def test_partial_over_partial_carries_both(self):
        first = CatalogRow("/plone/a", idx={"Title": "B"}, partial=True, own={"object_provides": ["J"]})
        second = CatalogRow("/plone/moved", idx={"review_state": "x"}, partial=True, meta={"Title": "B"})
        merged = first.merged(second)
        self.assertTrue(merged.partial)
        self.assertEqual(merged.path, "/plone/moved")
        self.assertEqual(merged.parent_path, "/plone")
        self.assertEqual(merged.path_depth, 2)
        self.assertEqual(merged.idx, {"Title": "B", "review_state": "x"})
        self.assertEqual(merged.meta, {"Title": "B"})
        params = row.sql_params(merged)
        self.assertTrue(params["has_object_provides"])
        self.assertFalse(params["has_searchable_text"])

    def test_pending_notes_the_old_path_of_a_moved_row(self):
        pending = Pending()
        pending.catalog(1, self.full())
        pending.catalog(1, CatalogRow("/plone/moved", partial=True))
        self.assertEqual(list(pending.removed), ["/plone/a"])
        self.assertEqual(pending.rows[1].path, "/plone/moved")
        self.assertEqual(pending.rows[1].idx, self.full().idx)

    def test_clearing_an_index(self):
        full = self.full().cleared("Title", None)
        self.assertEqual(full.idx, {"Subject": ["x"]})
        self.assertEqual(full.word_counts, {})
        partial = CatalogRow("/plone/a", partial=True).cleared("SearchableText", "searchable_text")
        self.assertEqual(partial.word_counts, {"SearchableText": None})  # removes the stored key
        self.assertEqual(partial.own, {})  # the commit clears the stored column (clear_index_sql)
        self.assertEqual(partial.idx, {})
        carried = CatalogRow("/plone/a", partial=True, own={"searchable_text": "'a':1"})
        self.assertEqual(carried.cleared("SearchableText", "searchable_text").own, {"searchable_text": None})
        self.assertEqual(
            self.full().cleared("SearchableText", "searchable_text").own["searchable_text"], None
        )


class ColumnTableTest(unittest.TestCase):
    def test_own_columns_match_the_registry(self):
        self.assertEqual(sorted(c.name for c in row.own_columns()), sorted(registry.OWN_COLUMNS.values()))

    def test_every_user_follows_a_new_column(self):
        """A typed column added to the table reaches the DDL, the writes
        of full and partial rows, the overlay and the clearing of rows."""
        added = Column("typed_state", "TEXT", Merge.IF_CARRIED)
        with mock.patch.object(row, "COLUMNS", (*row.COLUMNS, added)):
            self.assertIn("ADD COLUMN IF NOT EXISTS typed_state TEXT", schema.schema_sql())
            extra = {c.name: c.value_expr for c in processor.CatalogStateProcessor().get_extra_columns()}
            self.assertEqual(extra["typed_state"], "%(typed_state)s::text")
            self.assertIn("typed_state = p.typed_state", row.full_rows_sql())
            self.assertIn("o.typed_state IS DISTINCT FROM p.typed_state", row.full_rows_sql())
            self.assertIn("typed_state text, has_typed_state boolean", row.full_rows_sql())
            self.assertIn(
                "typed_state = CASE WHEN p.has_typed_state THEN p.typed_state ELSE o.typed_state END",
                row.partial_update_sql(),
            )
            self.assertIn("typed_state text, has_typed_state boolean", row.partial_update_sql())
            self.assertIn("typed_state = NULL", row.clear_all_sql())
            carried = CatalogRow("/plone/a", partial=True, own={"typed_state": "published"})
            params = row.sql_params(carried)
            self.assertEqual((params["typed_state"], params["has_typed_state"]), ("published", True))
            pending = Pending()
            pending.catalog(7, carried)
            sql, params = overlay.catalog_sql("SELECT 1", pending)
            self.assertIn("o.typed_state AS typed_state", sql)
            self.assertIn("CASE WHEN p.has_typed_state THEN p.typed_state ELSE o.typed_state END", sql)
            self.assertIn("typed_state text, has_typed_state boolean", sql)
            self.assertEqual(orjson.loads(params[-1])[0]["typed_state"], "published")

    def test_partial_update_merges_as_python_does(self):
        sql = row.partial_update_sql()
        self.assertIn("idx = jsonb_strip_nulls(COALESCE(o.idx, '{}'::jsonb) || p.idx)", sql)
        self.assertIn(
            "word_counts = NULLIF(jsonb_strip_nulls(COALESCE(o.word_counts, '{}'::jsonb) || p.word_counts), '{}')",
            sql,
        )
        self.assertIn("meta = COALESCE(p.meta, o.meta)", sql)
        self.assertIn("path = p.path", sql)
        # metadata travels as its JSON text; what a partial row leaves alone, as null
        partial = CatalogRow("/plone/a", {"Title": "A"}, meta={"Title": "A\x00"}, partial=True)
        (records,) = row.partial_update_params({7: partial})
        (record,) = orjson.loads(records)
        self.assertEqual(orjson.loads(record["meta"]), {"Title": "A\x00"})
        self.assertEqual((record["idx"], record["has_searchable_text"]), ({"Title": "A"}, False))

    def test_full_rows_are_written_where_they_changed(self):
        sql = row.full_rows_sql()
        self.assertIn("idx = p.idx", sql)
        self.assertIn("portal_type = (((p.idx)->>'portal_type') COLLATE \"C\")", sql)
        self.assertIn(row.STAMP, sql)
        where = sql.partition("WHERE o.zoid = p.zoid AND ")[2]
        # JSONB as text: a row is kept only if it would be written identically
        # (not as differs_sql compares: keyword lists in another order differ)
        self.assertIn("(o.idx)::text IS DISTINCT FROM (p.idx)::text", where)
        self.assertNotIn("jsonb_agg", where)
        self.assertIn("o.meta IS DISTINCT FROM p.meta", where)
        self.assertIn("o.searchable_text IS DISTINCT FROM p.searchable_text", where)
        # typed columns too: a row written while they were not read is completed
        self.assertIn("o.review_state IS DISTINCT FROM (((p.idx)->>'review_state') COLLATE \"C\")", where)
        self.assertIn(
            "(o.allowed_roles_and_users)::text IS DISTINCT FROM (((p.idx)->'allowedRolesAndUsers'))::text",
            where,
        )
        for column in (*row.COLUMNS, *row.TYPED):
            self.assertIn(f"o.{column.name}", where)

    def test_typed_columns_follow_idx(self):
        """Every statement that writes idx sets the hot keys' typed columns
        from the idx it writes, as the index reads it from idx."""
        names = [t.name for t in row.TYPED]
        self.assertEqual(
            names,
            ["portal_type", "review_state", "allowed_roles_and_users", "effective_start", "effective_end"],
        )
        state = next(t for t in row.TYPED if t.name == "review_state")
        self.assertEqual(state.value_sql("x"), "(((x)->>'review_state') COLLATE \"C\")")
        end = next(t for t in row.TYPED if t.name == "effective_end")
        self.assertEqual(end.value_sql("x"), "(((x)->'effectiveRange'->>1)::bigint)")
        self.assertIn("portal_type = (((p.idx)->>'portal_type') COLLATE \"C\")", row.full_rows_sql())
        self.assertIn(
            "allowed_roles_and_users = ((jsonb_strip_nulls(COALESCE(o.idx, '{}'::jsonb) || p.idx))->'allowedRolesAndUsers')",
            row.partial_update_sql(),
        )
        self.assertIn("effective_start = NULL", row.clear_all_sql())
        self.assertEqual(
            dict(row.extra_columns())["portal_type"], "(((%(idx)s::jsonb)->>'portal_type') COLLATE \"C\")"
        )
        for name in names:
            self.assertIn(f"ADD COLUMN IF NOT EXISTS {name} ", row.column_ddl())
            self.assertIn(name, row.column_names())
        fill = row.fill_typed_sql()
        self.assertTrue(fill.startswith("UPDATE object_state SET portal_type = (((idx)->>'portal_type')"))
        self.assertIn("review_state IS DISTINCT FROM", fill)
        # verify checks them where searches read them
        self.assertNotIn("portal_type", row.differs_sql("o", "p"))
        self.assertIn("o.portal_type IS DISTINCT FROM", row.differs_sql("o", "p", typed=True))

    def test_clearing_sql(self):
        self.assertEqual(
            row.clear_index_sql("Title", None),
            "UPDATE object_state SET idx = idx - 'Title', word_counts = NULLIF(word_counts - 'Title', '{}') "
            "WHERE (idx ? 'Title' OR word_counts ? 'Title') AND NOT (zoid = ANY(%s::bigint[]))",
        )
        # a hot key's typed columns follow its idx
        hot = row.clear_index_sql("review_state", None)
        self.assertIn("review_state = (((idx - 'review_state')->>'review_state') COLLATE \"C\")", hot)
        own = row.clear_index_sql("SearchableText", "searchable_text")
        self.assertIn("searchable_text = NULL", own)
        self.assertNotIn("idx", own)  # an index with its own column has no key in idx
        with self.assertRaises(ValueError):
            row.clear_index_sql("x'; DROP TABLE object_state; --", None)
