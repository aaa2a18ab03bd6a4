"""The write path: catalog rows follow the ZODB transaction."""

from helpers import CatalogTestCase
from helpers import relpaths
from plone import api
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog import search as search_module
from functools import partial
from unittest import mock

from zope.interface import alsoProvides
from zope.interface import Interface

import psycopg
import transaction


class IMarker(Interface):
    """A marker interface set on content in a test."""


class WriteTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.dsn = storage_dsn(self.portal)

    def rows(self):
        """Catalog rows as committed, read on a separate connection."""
        with psycopg.connect(self.dsn) as conn:
            return dict(conn.execute("SELECT path, idx->>'Title' FROM object_state WHERE idx IS NOT NULL"))

    def find(self, **query):
        return relpaths(self.portal, self.catalog.unrestrictedSearchResults(**query))

    def test_commit_writes_rows_with_objects(self):
        api.content.create(container=self.portal, type="Document", id="d1", title="First")
        self.assertNotIn("/plone/d1", self.rows())
        transaction.commit()
        self.assertIn("/plone/d1", self.rows())
        with psycopg.connect(self.dsn) as conn:
            # the catalog row is the object's own row
            cls, state_title = conn.execute(
                "SELECT class_name, state->>'title' FROM object_state WHERE path = '/plone/d1'"
            ).fetchone()
        self.assertEqual((cls, state_title), ("Document", "First"))

    def test_abort_leaves_catalog_as_it_was(self):
        before = self.rows()
        api.content.create(container=self.portal, type="Document", id="d2", title="Second")
        self.assertEqual(len(self.find(id="d2")), 1)  # pending in this transaction
        transaction.abort()
        self.assertEqual(before, self.rows())
        self.assertEqual(self.find(id="d2"), [])

    def test_savepoint_rollback_restores_pending(self):
        api.content.create(container=self.portal, type="Document", id="kept", title="Kept")
        savepoint = transaction.savepoint()
        api.content.create(container=self.portal, type="Document", id="dropped", title="Dropped")
        self.catalog.unrestrictedSearchResults(id="dropped")  # flushes the queue
        savepoint.rollback()
        transaction.commit()
        rows = self.rows()
        self.assertIn("/plone/kept", rows)
        self.assertNotIn("/plone/dropped", rows)

    def test_failed_commit_writes_nothing(self):
        api.content.create(container=self.portal, type="Document", id="doomed", title="Doomed")
        from plone.pgcatalog import row

        with mock.patch.object(row, "sql_params", side_effect=RuntimeError("boom")):
            with self.assertRaises(RuntimeError):
                transaction.commit()
        transaction.abort()
        self.assertNotIn("/plone/doomed", self.rows())

    def test_edit_workflow_move_delete(self):
        doc = api.content.create(container=self.portal, type="Document", id="d3", title="Third")
        folder = api.content.create(container=self.portal, type="Folder", id="f", title="F")
        transaction.commit()
        doc.title = "Edited"
        doc.reindexObject()
        transaction.commit()
        self.assertEqual(self.rows()["/plone/d3"], "'edited':1")
        api.content.move(source=doc, target=folder)
        transaction.commit()
        rows = self.rows()
        self.assertNotIn("/plone/d3", rows)
        self.assertIn("/plone/f/d3", rows)
        api.content.delete(obj=folder["d3"])
        transaction.commit()
        self.assertNotIn("/plone/f/d3", self.rows())
        self.assertEqual(self.find(portal_type="Document", path="/plone/f"), [])

    def test_partial_reindex_updates_only_named_indexes(self):
        doc = api.content.create(container=self.portal, type="Document", id="d4", title="Fourth")
        transaction.commit()
        doc.title = "Changed but not reindexed"
        doc.exclude_from_nav = True
        self.catalog.catalog_object(doc, idxs=["exclude_from_nav"], update_metadata=0)
        transaction.commit()
        self.assertEqual(self.find(exclude_from_nav=True), ["/d4"])
        self.assertEqual(self.rows()["/plone/d4"], "'fourth':1")
        brain = self.catalog.unrestrictedSearchResults(id="d4")[0]
        self.assertEqual(brain.Title, "Fourth")
        # indexes in columns of their own: kept by other partial reindexes,
        # replaced by their own
        provides = "plone.app.contenttypes.interfaces.IDocument"
        self.assertEqual(self.find(object_provides=provides), ["/d4"])
        alsoProvides(doc, IMarker)
        self.catalog.catalog_object(doc, idxs=["object_provides"], update_metadata=0)
        transaction.commit()
        self.assertEqual(self.find(object_provides=IMarker.__identifier__), ["/d4"])
        self.assertEqual(self.find(object_provides=provides), ["/d4"])
        self.assertEqual(self.find(SearchableText="fourth"), ["/d4"])

    def test_reindex_index_loads_objects_in_batches(self):
        """reindexIndex and refreshCatalog recompute from the objects, loaded
        a batch at a time (one prefetch per batch, not a load per object)."""
        folder = api.content.create(container=self.portal, type="Folder", id="batch", title="Batch")
        for i in range(7):
            folder.invokeFactory("Document", f"b{i}", title=f"B {i}")
        transaction.commit()
        for i in range(7):
            folder[f"b{i}"].exclude_from_nav = True  # not reindexed
        transaction.commit()
        self.assertEqual(self.find(exclude_from_nav=True), [])
        from plone.pgcatalog import rebuild

        batches = []
        original = rebuild.prefetch

        def spy(context, zoids):
            batches.append(len(zoids))
            return original(context, zoids)

        cataloged = len(self.catalog)
        with mock.patch.object(rebuild, "BATCH", 3), mock.patch.object(rebuild, "prefetch", spy):
            self.catalog.reindexIndex("exclude_from_nav")
        transaction.commit()
        self.assertEqual(self.find(exclude_from_nav=True), [f"/batch/b{i}" for i in range(7)])
        self.assertEqual(sum(batches), cataloged)
        self.assertEqual(max(batches), 3)
        self.assertEqual(len(batches), -(-cataloged // 3))
        for i in range(7):
            folder[f"b{i}"].title = f"Refreshed {i}"
        batches.clear()
        with mock.patch.object(rebuild, "prefetch", spy):
            self.catalog.refreshCatalog(clear=1)
        transaction.commit()
        self.assertEqual(len(self.catalog), cataloged)
        self.assertEqual(len(batches), -(-cataloged // rebuild.BATCH))
        # equal scores: ZCatalog lists ties by record id, newest first
        self.assertEqual(self.find(Title="refreshed"), [f"/batch/b{i}" for i in reversed(range(7))])
        # a transaction that changes the catalog only still commits it
        self.catalog.uncatalog_object("/plone/batch/b6")
        transaction.commit()
        self.assertNotIn("/plone/batch/b6", self.rows())

    def catalog_closure(self, conn):
        """zoids of the tool and every persistent object reachable from it."""
        zoid = int.from_bytes(self.catalog.aq_base._p_oid, "big")
        return {
            z
            for (z,) in conn.execute(
                "WITH RECURSIVE reach(zoid) AS (SELECT %s::bigint UNION "
                "SELECT unnest(o.refs) FROM object_state o JOIN reach r ON o.zoid = r.zoid) "
                "SELECT zoid FROM reach",
                (zoid,),
            )
        }

    def test_no_catalog_objects_in_zodb(self):
        """A new document stores no catalog object: nothing stored in its
        transaction belongs to the catalog tool, and the tool holds no
        index objects or BTrees at all.  (The first values of indexes that
        were empty at install decide once what they hold, a change of the
        catalog's definitions as ``addIndex`` is: a first document does.)"""
        api.content.create(container=self.portal, type="Document", id="first", title="First")
        transaction.commit()
        with psycopg.connect(self.dsn) as conn:
            before = conn.execute("SELECT max(tid) FROM transaction_log").fetchone()[0]
        api.content.create(container=self.portal, type="Document", id="counted", title="Counted")
        transaction.commit()
        with psycopg.connect(self.dsn) as conn:
            stored = dict(
                conn.execute(
                    "SELECT zoid, class_mod || '.' || class_name FROM object_state WHERE tid > %s",
                    (before,),
                ).fetchall()
            )
            closure = self.catalog_closure(conn)
            closure_classes = [
                c
                for (c,) in conn.execute(
                    "SELECT class_mod || '.' || class_name FROM object_state WHERE zoid = ANY(%s)",
                    (list(closure),),
                )
            ]
        self.assertTrue(any(c.endswith(".Document") for c in stored.values()), stored)
        self.assertEqual(set(stored) & closure, set())
        # the tool alone: its lexicons are kept within its own record
        self.assertEqual(closure_classes, ["plone.pgcatalog.tool.PGCatalogTool"])
        self.assertEqual({o.meta_type for o in self.catalog.objectValues()}, {"ZCTextIndex Lexicon"})

    def test_pages_bring_their_metadata(self):
        """A batch's metadata comes with its rows, committed or as this
        transaction left it, whether the page is found by walking the sort
        index or by the plain plan."""
        doc = api.content.create(container=self.portal, type="Document", id="paged", title="Committed title")
        transaction.commit()
        page = {"sort_on": "sortable_title", "b_start": 0, "b_size": 5}
        separately = mock.patch.object(search_module, "load_metadata", side_effect=AssertionError)
        with separately:
            self.assertEqual(self.catalog(UID=doc.UID(), **page)[0].Title, "Committed title")
            doc.title = "Metadata kept"
            self.catalog.catalog_object(doc, idxs=["Title"], update_metadata=0)
            self.assertEqual(self.catalog(Title="kept", **page)[0].Title, "Committed title")
            doc.title = "Pending title"
            doc.reindexObject()
            self.assertEqual(self.catalog(Title="pending", **page)[0].Title, "Pending title")
            ranked = self.catalog(SearchableText="pending", b_start=0, b_size=5)  # by relevance
            self.assertEqual([b.Title for b in ranked], ["Pending title"])
            new = api.content.create(container=self.portal, type="Document", id="new", title="New title")
            self.assertEqual(self.catalog(UID=new.UID(), **page)[0].Title, "New title")
            latest = self.catalog(
                portal_type="Document", sort_on="modified", sort_order="descending", sort_limit=2
            )
            self.assertEqual([b.Title for b in latest], ["New title", "Pending title"])
        transaction.abort()

    def test_reads_see_pending_changes(self):
        """Before the commit, every read path sees the transaction's changes."""
        from plone.app.uuid.utils import uuidToObject

        counter = self.catalog.getCounter()
        doc = api.content.create(container=self.portal, type="Document", id="early", title="Early bird")
        uid = doc.UID()
        self.assertEqual(self.find(UID=uid), ["/early"])
        self.assertIs(uuidToObject(uid).aq_base, doc.aq_base)
        rid = self.catalog.getrid("/plone/early")
        self.assertIsNotNone(rid)
        self.assertEqual(self.catalog.getpath(rid), "/plone/early")
        self.assertEqual(self.catalog.unrestrictedSearchResults(UID=uid)[0].Title, "Early bird")
        self.assertEqual(self.catalog.getCounter(), counter + 1)
        # metadata not refreshed by a partial reindex without update_metadata
        doc.title = "Changed"
        self.catalog.catalog_object(doc, idxs=["Title"], update_metadata=0)
        brain = self.catalog.unrestrictedSearchResults(Title="changed")[0]
        self.assertEqual(brain.Title, "Early bird")
        self.assertEqual(self.find(Title="early"), [])
        self.catalog.manage_catalogClear()
        self.assertEqual(len(self.catalog), 0)
        self.assertEqual(self.find(portal_type="Document"), [])
        transaction.abort()
        self.assertEqual(self.find(UID=uid), [])
        self.assertEqual(self.catalog.getCounter(), counter)


class IndexerReadTest(CatalogTestCase):
    """Extraction reads what the indexers give as plone.indexer's wrapper
    gives it."""

    def test_reader_reads_as_the_wrapper(self):
        from plone.indexer.interfaces import IIndexableObject
        from plone.pgcatalog import registry
        from plone.pgcatalog.extraction import indexable
        from plone.pgcatalog.extraction import walking
        from plone.pgcatalog.extraction import wrapper_reader
        from Products.PythonScripts.PythonScript import manage_addPythonScript
        from zope.component import queryMultiAdapter

        manage_addPythonScript(self.portal, "pgc_acquired_script")
        self.portal.pgc_acquired_value = "acquired, not indexed"
        folder = api.content.create(container=self.portal, type="Folder", id="rf", title="Folder")
        doc = api.content.create(container=folder, type="Document", id="rd", title="Doc", subject=("x",))
        names = {s for d in registry.index_defs(self.catalog).values() for s in d.source_names}
        names |= set(registry.metadata_columns(self.catalog))
        names |= {"pgc_acquired_script", "pgc_acquired_value", "nothing_at_all", "review_state"}
        names |= {"_getWrappedObject", "title", "id"}

        def outcome(read, name):
            try:
                value = read(name)
            except Exception as error:
                return type(error)
            if callable(value) and not isinstance(value, type):
                try:
                    value = value()
                except Exception as error:
                    return ("raised", type(error))
            return value.getPhysicalPath() if hasattr(value, "getPhysicalPath") else value

        def compare(wrapper, read):
            self.assertIsNotNone(read)
            for name in sorted(names):
                with self.subTest(obj=obj.getId(), name=name):
                    self.assertEqual(outcome(read, name), outcome(partial(getattr, wrapper), name))
            if obj is not self.portal:  # the portal's own, the others acquire them
                self.assertEqual(outcome(read, "pgc_acquired_value"), AttributeError)
                self.assertNotEqual(outcome(read, "pgc_acquired_script"), AttributeError)

        for obj in (self.portal, folder, doc):
            wrapper = queryMultiAdapter((obj, self.catalog), IIndexableObject)
            compare(wrapper, wrapper_reader(wrapper))
            # a rebuild's walk: the wrapper made with the walk's workflow
            # tool, names the object lacks acquired once per container
            with walking() as walk:
                for _ in range(2):
                    made, read = indexable(obj, self.catalog)
                    self.assertIs(type(made), type(wrapper))
                    compare(made, read)
            self.assertTrue(walk._acquired or obj is self.portal)
        self.assertIsNone(wrapper_reader(doc))  # not the wrapper: plain getattr
        self.assertEqual(indexable(wrapper, self.catalog), (wrapper, None))


class RebuildWriteTest(CatalogTestCase):
    """A rebuild's commit writes the rows that changed, in bulk."""

    def stored(self):
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            return {
                path: (idx, meta, typed, tid)
                for path, idx, meta, typed, tid in conn.execute(
                    "SELECT path, idx, meta, portal_type, catalog_tid FROM object_state WHERE idx IS NOT NULL"
                )
            }

    def find_titles(self, word):
        return sorted(relpaths(self.portal, self.catalog.unrestrictedSearchResults(Title=word)))

    def test_rebuild_writes_changed_rows_only(self):
        for i in range(3):
            api.content.create(container=self.portal, type="Document", id=f"r{i}", title=f"Rebuilt {i}")
        transaction.commit()
        self.catalog.clearFindAndRebuild()
        transaction.commit()
        before = self.stored()
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            conn.execute("UPDATE object_state SET idx = idx - 'Title', meta = '{}' WHERE path = '/plone/r1'")
            conn.execute("UPDATE object_state SET portal_type = 'Tampered' WHERE path = '/plone/r2'")
        self.catalog.clearFindAndRebuild()
        transaction.commit()
        after = self.stored()
        self.assertEqual(set(after), set(before))
        rewritten = {path for path in after if after[path][3] != before[path][3]}
        self.assertEqual(rewritten, {"/plone/r1", "/plone/r2"})
        for path in after:
            self.assertEqual(after[path][:3], before[path][:3], path)
        self.assertEqual(self.find_titles("rebuilt"), ["/r0", "/r1", "/r2"])
