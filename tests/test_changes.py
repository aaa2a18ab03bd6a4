"""The change log (schema.CHANGE_LOG) that facet counts are brought up to
date from (plone.pgcatalog.changes): what a commit logs, how much the log
keeps, and that counts are made again where it cannot tell.
"""

from helpers import CatalogTestCase
from plone import api
from plone.pgcatalog import facets
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.schema import LOG_KEPT

import psycopg
import transaction


class ChangeLogTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.folder = api.content.create(container=self.portal, type="Folder", id="logged", title="Logged")
        for i in range(3):
            api.content.create(container=self.folder, type="Document", id=f"d{i}", title=f"Doc {i}")
        transaction.commit()
        facets._remembered.clear()

    def sql(self, statement: str, params=()) -> list:
        with psycopg.connect(storage_dsn(self.catalog)) as conn:
            return conn.execute(statement, params).fetchall()

    def subjects(self) -> dict:
        transaction.begin()  # (a snapshot after the last commit)
        return self.catalog.facetCounts(["Subject"], path="/".join(self.folder.getPhysicalPath()))[
            "Subject"
        ].counts

    def fake(self) -> None:
        """Put other counts in the place of those just made: they stand
        until the log cannot bring them up to date."""
        key, (stamp, (minute, _)) = facets._remembered.items()[-1]
        facets._remembered.put(key, stamp, (minute, facets._Tally({(0, '"fake"'): 9}, (9,))))

    def test_a_commit_logs_each_changed_row_as_it_was(self):
        doc = self.folder["d1"]
        zoid = int.from_bytes(doc._p_oid, "big")
        doc.setSubject(["before"])
        doc.reindexObject()
        transaction.commit()
        doc.setSubject(["after"])
        doc.reindexObject()
        transaction.commit()
        rows = self.sql(
            "SELECT l.idx->'Subject', m.counter FROM pgcatalog_changes l JOIN pgcatalog_commits m ON m.xid = l.xid "
            "WHERE l.zoid = %s ORDER BY l.id",
            (zoid,),
        )
        self.assertEqual([subjects for subjects, _ in rows][-2:], [None, ["before"]])  # (no subject: no key)
        self.assertEqual(rows[-1][1], self.sql("SELECT value FROM pgcatalog_counter")[0][0])
        # a new item logs its zoid alone: it was no catalog row
        new = api.content.create(container=self.folder, type="Document", id="new", title="New")
        transaction.commit()
        self.assertEqual(
            self.sql(
                "SELECT idx FROM pgcatalog_changes WHERE zoid = %s", (int.from_bytes(new._p_oid, "big"),)
            ),
            [(None,)],
        )

    def test_the_log_keeps_the_last_commits(self):
        self.folder["d0"].setSubject(["kept"])
        self.folder["d0"].reindexObject()
        transaction.commit()
        counts = self.subjects()
        self.assertEqual(counts, {"kept": 1})
        self.fake()
        self.assertEqual(self.subjects(), {"fake": 9})
        # the next commit is one that sheds what is LOG_KEPT commits old
        value = self.sql("SELECT value FROM pgcatalog_counter")[0][0]
        jump = (value // 64 + LOG_KEPT // 64 + 2) * 64 - 1
        with psycopg.connect(storage_dsn(self.catalog)) as conn:
            conn.execute("UPDATE pgcatalog_counter SET value = %s", (jump,))
        self.folder["d1"].setTitle("Changed")
        self.folder["d1"].reindexObject()
        transaction.commit()
        self.assertEqual(self.sql("SELECT counter FROM pgcatalog_commits"), [(jump + 1,)])
        older = "SELECT count(*) FROM pgcatalog_changes WHERE xid <> (SELECT xid FROM pgcatalog_commits)"
        self.assertEqual(self.sql(older), [(0,)])
        self.assertEqual(self.sql("SELECT logged_from FROM pgcatalog_counter"), [(jump + 1 - LOG_KEPT,)])
        # the fake counts' commit is no longer in the log: counted again
        self.assertEqual(self.subjects(), counts)
        self.fake()
        self.folder["d2"].setTitle("Changed")
        self.folder["d2"].reindexObject()
        transaction.commit()
        self.assertEqual(self.subjects(), {"fake": 9})
