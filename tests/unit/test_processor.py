"""The commit's write of full rows: in bulk, and only where they changed."""

from plone.pgcatalog import processor
from plone.pgcatalog import row
from plone.pgcatalog.row import CatalogRow
from plone.pgcatalog.row import Column
from plone.pgcatalog.row import Merge
from unittest import mock

import orjson
import unittest


class FakeCursor:
    def __init__(self, changed: int):
        self.changed = changed
        self.statements: list[tuple[str, tuple]] = []
        self.rowcount = -1

    def execute(self, sql, params):
        self.statements.append((sql, params))
        self.rowcount = self.changed


class FullRowsTest(unittest.TestCase):
    def full(self, n: int) -> CatalogRow:
        return CatalogRow(
            f"/plone/d{n}",
            idx={"Title": f"'d{n}':1", "portal_type": "Document"},
            word_counts={"Title": [1, {f"d{n}": 1}]},
            meta={"Title": f"D{n}"},
            own={"searchable_text": f"'d{n}':1", "object_provides": ["I"]},
        )

    def test_rows_go_in_bulk_statements(self):
        full = [(n, self.full(n)) for n in range(5)]
        cursor = FakeCursor(changed=1)
        with mock.patch.object(processor, "FULL_ROWS_PER_STATEMENT", 2):
            changed = processor.write_full_rows(cursor, full)
        self.assertEqual(len(cursor.statements), 3)  # 2 + 2 + 1 rows
        self.assertEqual(changed, 3)
        records = [record for _, (param,) in cursor.statements for record in orjson.loads(param)]
        self.assertEqual([r["zoid"] for r in records], list(range(5)))
        # the records a partial write merges, whole: the same encoding
        self.assertEqual(records[3], orjson.loads(orjson.dumps(row.record(3, self.full(3), written=True))))
        self.assertEqual(processor.write_full_rows(cursor, []), 0)
        self.assertEqual(len(cursor.statements), 3)

    def test_only_changed_rows_are_written(self):
        sql = processor.full_rows_sql()
        self.assertIn("idx = p.idx", sql)
        self.assertIn("portal_type = (((p.idx)->>'portal_type') COLLATE \"C\")", sql)
        self.assertIn(row.STAMP, sql)
        where = sql.partition("WHERE o.zoid = p.zoid AND ")[2]
        # JSONB as text: a row is kept only if it would be written identically
        self.assertIn("(o.idx)::text IS DISTINCT FROM (p.idx)::text", where)
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

    def test_a_new_column_is_written_and_compared(self):
        added = Column("typed_state", "TEXT", Merge.IF_CARRIED)
        with mock.patch.object(row, "COLUMNS", (*row.COLUMNS, added)):
            sql = processor.full_rows_sql()
        self.assertIn("typed_state = p.typed_state", sql)
        self.assertIn("o.typed_state IS DISTINCT FROM p.typed_state", sql)
        self.assertIn("typed_state text, has_typed_state boolean", sql)
