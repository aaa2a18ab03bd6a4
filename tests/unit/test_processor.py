"""The commit's write of full rows: in bulk, and only where they changed."""

from plone.pgcatalog import processor
from plone.pgcatalog import row
from plone.pgcatalog.row import CatalogRow
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
        self.assertEqual({sql for sql, _ in cursor.statements}, {row.full_rows_sql()})
        self.assertEqual(changed, 3)
        records = [record for _, (param,) in cursor.statements for record in orjson.loads(param)]
        self.assertEqual([r["zoid"] for r in records], list(range(5)))
        # the records a partial write merges, whole: the same encoding
        self.assertEqual(records[3], orjson.loads(orjson.dumps(row.record(3, self.full(3), written=True))))
        self.assertEqual(processor.write_full_rows(cursor, []), 0)
        self.assertEqual(len(cursor.statements), 3)
