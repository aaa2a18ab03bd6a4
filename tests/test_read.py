"""Lazy results, connections and bad input."""

from DateTime.interfaces import DateTimeError
from helpers import CatalogTestCase
from helpers import pages_not_kept
from plone import api
from plone.pgcatalog import cells
from plone.pgcatalog import connection
from plone.pgcatalog import pools
from plone.pgcatalog import database
from plone.pgcatalog import search as search_module
from plone.pgcatalog.values import array_literal
from psycopg.rows import tuple_row
from Products.ZCatalog.ZCatalog import CatalogError
from Products.ZCTextIndex.ParseTree import ParseError
from unittest import mock
from ZPublisher.pubevents import PubSuccess
from zope.event import notify
from zope.globalrequest import setRequest

import os

import psycopg
import transaction


class ReadTest(CatalogTestCase):
    """What each search sends: the statements counted here are those of
    pages selected, not kept (plone.pgcatalog.kept: tests/test_kept.py)."""

    def setUp(self):
        super().setUp()
        self.create(30)
        pages_not_kept(self)

    def create(self, count):
        folder = self.portal.get("many") or api.content.create(
            container=self.portal, type="Folder", id="many", title="Many"
        )
        for i in range(len(folder), count):
            folder.invokeFactory("Document", f"d{i:04d}", title=f"Doc {i:04d}")
        transaction.commit()

    def count_metadata_queries(self):
        calls = []
        original = search_module.load_metadata

        def spy(tool, zoids):
            calls.append(len(zoids))
            return original(tool, zoids)

        return calls, mock.patch.object(search_module, "load_metadata", spy)

    def test_lazy_metadata(self):
        self.create(1000)
        calls, patch = self.count_metadata_queries()
        with patch:
            results = self.catalog(portal_type="Document", sort_on="sortable_title")
            self.assertEqual(len(results), 1000)
            paths = [b.getPath() for b in results[:10]]
            self.assertEqual(paths[0], "/plone/many/d0000")
            self.assertEqual(calls, [])  # no metadata touched, no metadata query
            # the first window's metadata came with the first rows
            self.assertEqual([b.Title for b in results[:20]], [f"Doc {i:04d}" for i in range(20)])
            self.assertEqual(calls, [])
            self.assertEqual(results[50].Title, "Doc 0050")
            self.assertEqual(len(calls), 1)  # one query, for a window
            self.assertLess(calls[0], 100)
            self.assertEqual(results[51].Title, "Doc 0051")  # same window
            self.assertEqual(len(calls), 1)
            # rows past the first statement's are selected with their metadata
            self.assertEqual(results[500].Title, "Doc 0500")
            self.assertEqual(len(calls), 1)
            titles = [b.Title for b in results]
            self.assertEqual(titles[999], "Doc 0999")
            self.assertLessEqual(len(calls), 5)  # bounded for the whole walk: the first rows' windows
        self.assertEqual(titles, [f"Doc {i:04d}" for i in range(1000)])

    def test_rows_selected_when_needed(self):
        """A large unbatched result hands over its length and first rows;
        the others are selected when walked to, a growing window at a time."""
        self.create(1000)
        fetched = []
        original = database.fetch

        def spy(tool, sql, params, **options):
            rows = original(tool, sql, params, **options)
            fetched.append(len(rows))
            return rows

        with mock.patch.object(database, "fetch", spy):
            results = self.catalog(portal_type="Document", sort_on="sortable_title")
            self.assertEqual(len(results), 1000)
            self.assertEqual(results.actual_result_count, 1000)
            self.assertEqual(fetched, [100])  # the search moved 100 rows and the count, not 1000 rows
            self.assertEqual(results[950].getId, "d0950")  # a jump: a window from there
            self.assertEqual(fetched[1], 50)
            ids = [b.getId for b in results]
            # a page of a large result: no count unless asked
            fetched.clear()
            page = self.catalog(portal_type="Document", sort_on="sortable_title", b_start=40, b_size=20)
            # a page brings its metadata with its rows: one statement, after
            # counting at most 2 * b_start matches (a batch past their middle
            # is taken from the end, as ZCatalog takes it)
            self.assertEqual(
                (len(page), page[0].getId, page[19].Title, fetched), (20, "d0040", "Doc 0059", [1, 20])
            )
            self.assertEqual(page.actual_result_count, 1000)
            last = self.catalog(portal_type="Document", sort_on="sortable_title", b_start=990, b_size=20)
            self.assertEqual((len(last), last.actual_result_count, last.count_queries), (10, 1000, 0))
        self.assertEqual(ids, [f"d{i:04d}" for i in range(1000)])
        self.assertLessEqual(results.row_queries, 8)
        walked = self.catalog(portal_type="Document", sort_on="sortable_title")
        self.assertEqual(sum(1 for _ in walked), 1000)
        self.assertEqual(walked.count_queries, 0)
        # relevance ranks every match of a word scored whole: counted with
        # the first rows (a word alone of more rows is walked: cells)
        with mock.patch.object(cells, "FEW_ALONE", 1000):
            ranked = self.catalog(SearchableText="Doc")
            self.assertEqual((len(ranked), ranked.count_queries, ranked.row_queries), (1000, 0, 0))
            # a page of them too (the search box's): every match was scored for it
            for b_start in (0, 990):
                page = self.catalog(SearchableText="Doc", b_start=b_start, b_size=10)
                self.assertEqual((len(page), page.actual_result_count, page.count_queries), (10, 1000, 0))
        past = self.catalog(SearchableText="Doc", b_start=1000, b_size=10)
        self.assertEqual((len(past), past.actual_result_count), (0, 1000))
        unsorted = self.catalog(portal_type="Document")
        self.assertEqual(
            sorted(b.getPath() for b in unsorted), sorted(f"/plone/many/d{i:04d}" for i in range(1000))
        )
        self.assertEqual([b.getRID() for b in unsorted], sorted(b.getRID() for b in unsorted))
        # every record, lazily too: the first rows and the count
        fetched.clear()
        with mock.patch.object(database, "fetch", spy):
            everything = self.catalog.searchAll()
            self.assertEqual(fetched, [100])  # the first rows and the count in one statement
        # every record, unfiltered: what a path search from the site finds
        self.assertEqual(
            sorted(b.getPath() for b in everything),
            sorted(b.getPath() for b in self.catalog.unrestrictedSearchResults(path="/plone")),
        )
        self.assertEqual([b.getRID() for b in everything], sorted(b.getRID() for b in everything))
        self.assertEqual([b.getRID() for b in self.catalog.getAllBrains()], [b.getRID() for b in everything])

    def test_walks_run_generic_plans(self):
        """A page sought along the sort index runs with PostgreSQL's generic
        plan; a read that plans as usual (the count before the walk) sets
        the mode back.  The mode holds for the rest of the snapshot and is
        set only when a read asks for the other one."""
        calls = []
        original = database.fetch

        def spy(tool, sql, params, **options):
            calls.append(options.get("generic", False))
            return original(tool, sql, params, **options)

        conn = connection.storage_instance(self.portal).pg_connection

        def mode() -> str:
            return conn.execute("SHOW plan_cache_mode").fetchone()["plan_cache_mode"]

        modes = []
        with (
            mock.patch.object(database, "fetch", spy),
            mock.patch.object(conn, "execute", wraps=conn.execute) as sent,
        ):
            for _ in range(7):  # psycopg prepares a statement on its sixth run
                page = self.catalog(portal_type="Document", sort_on="modified", b_start=5, b_size=5)
                self.assertEqual(len(page), 5)
                modes.append(mode())
            switches = [
                call.args[0]
                for call in sent.call_args_list
                if call.args[0].startswith("SET LOCAL plan_cache_mode")
            ]
            self.assertEqual(calls, [False, True] * 7)  # the count of at most 2 * b_start, the walk
            self.assertEqual(modes, ["force_generic_plan"] * 7)
            self.assertEqual(
                switches, [connection.GENERIC_PLAN] + [connection.DEFAULT_PLAN, connection.GENERIC_PLAN] * 6
            )
            len(self.catalog(portal_type="Document"))  # the count of a type: planned as usual
            self.assertEqual(mode(), "auto")
            sent.reset_mock()
            for _ in range(3):
                len(self.catalog(portal_type="Document", sort_on="modified", b_size=5))
            self.assertEqual(
                [
                    call.args[0]
                    for call in sent.call_args_list
                    if call.args[0].startswith("SET LOCAL plan_cache_mode")
                ],
                [connection.GENERIC_PLAN],  # once for the three walks
            )
        ids = [b.getId for b in self.catalog(portal_type="Document", sort_on="modified")[5:10]]
        self.assertEqual([b.getId for b in page], ids)
        transaction.abort()  # a new snapshot plans as usual
        self.assertEqual(mode(), "auto")

    def test_catalog_reads_run_without_jit(self):
        """PostgreSQL's JIT compiles a statement with a large estimate on
        every run, which a catalog's short reads never pay back: off in
        the storage's snapshot and on the catalog's own connections."""
        setting = "SELECT current_setting('jit')"
        self.assertEqual(len(self.catalog(portal_type="Document")), 30)
        conn = connection.storage_instance(self.portal).pg_connection
        self.assertEqual(conn.info.transaction_status, psycopg.pq.TransactionStatus.INTRANS)
        self.assertEqual(connection.fetch(self.catalog, setting, []), [("off",)])
        with mock.patch.dict(os.environ, {connection.READ_DSN_ENV: connection.storage_dsn(self.catalog)}):
            self.assertEqual(connection.fetch(self.catalog, setting, []), [("off",)])
        transaction.abort()

    def test_batch_and_counts(self):
        results = self.catalog(portal_type="Document", sort_on="sortable_title", b_start=20, b_size=10)
        self.assertEqual(len(results), 10)
        self.assertEqual(results.actual_result_count, 30)
        self.assertEqual(results[0].getId, "d0020")
        results = self.catalog(portal_type="Document", sort_on="sortable_title", sort_limit=5)
        self.assertEqual(len(results), 5)
        self.assertEqual(results.actual_result_count, 30)
        brain = results[0]
        self.assertEqual(brain.getRID(), self.catalog.getrid(brain.getPath()))
        self.assertEqual(self.catalog.getpath(brain.getRID()), brain.getPath())
        self.assertEqual(brain.getObject(), self.portal.many.d0000)
        self.assertTrue(brain.getURL().endswith("/plone/many/d0000"))
        # unknown metadata names are not attributes; known but missing ones are Missing.Value
        from Acquisition import aq_base
        from Missing import MV

        self.assertFalse(hasattr(aq_base(brain), "no_such_column"))
        self.assertIs(brain.getRemoteUrl, MV)

    def test_limits_out_of_range(self):
        """ZCatalog's sort fails from inside on these (a TypeError); here a
        limit of 0 or below is no limit and a batch of 0 or fewer rows is
        empty, counting its matches."""
        for limit in (0, -1, -5):
            results = self.catalog(portal_type="Document", sort_on="sortable_title", sort_limit=limit)
            self.assertEqual((len(results), results.actual_result_count), (30, 30), limit)
            self.assertEqual(results[29].getId, "d0029")
        for size in (0, -1):
            results = self.catalog(portal_type="Document", sort_on="sortable_title", b_start=5, b_size=size)
            self.assertEqual((len(results), results.actual_result_count), (0, 30), size)

    def test_array_values_arrive_intact(self):
        """List values travel as array literals: quotes, backslashes, commas,
        braces and the word NULL arrive as they were sent."""
        odd = ['say "hi"', "back\\slash", "a,b", "{braces}", "NULL", "ends\\"]
        folder = self.portal.many
        for i, subject in enumerate(odd):
            folder[f"d{i:04d}"].setSubject((subject,))
            folder[f"d{i:04d}"].reindexObject(idxs=["Subject"])
        transaction.commit()
        for subject in odd:
            found = self.catalog(Subject=[subject, "no such subject"])
            self.assertEqual([b.Subject for b in found], [(subject,)])
        self.assertEqual(len(self.catalog(Subject={"query": odd, "operator": "or"})), len(odd))
        self.assertEqual(len(self.catalog(portal_type="Document", Subject={"not": odd})), 30 - len(odd))
        values = [*odd, None, True, 1.5, float("inf"), float("nan"), 7]
        conn = connection.storage_instance(self.portal).pg_connection
        with conn.cursor(row_factory=tuple_row) as cur:
            sent = cur.execute("SELECT %s::text[]", [array_literal(values)]).fetchone()[0]
        self.assertEqual(sent, [*odd, None, "t", "1.5", "Infinity", "NaN", "7"])

    def test_request_reuses_one_connection(self):
        request = self.layer["request"]
        setRequest(request)
        with mock.patch.dict(os.environ, {connection.READ_DSN_ENV: connection.storage_dsn(self.portal)}):
            self.catalog(portal_type="Document", sort_limit=1)
            first = pools.held_connection()
            self.assertIsNotNone(first)
            self.catalog(portal_type="Folder")
            self.catalog.unrestrictedSearchResults(id="many")
            self.assertIs(pools.held_connection(), first)
            pool = pools.get_pool(connection.storage_dsn(self.portal))
            with mock.patch.object(pool, "putconn", wraps=pool.putconn) as putconn:
                notify(PubSuccess(request))
            self.assertIsNone(pools.held_connection())
            putconn.assert_called_once_with(first)  # given back to its pool
        setRequest(None)
        pools.close_pools()

    def test_bad_input(self):
        catalog = self.catalog
        with self.assertRaises(ParseError):
            catalog(SearchableText="doc AND")
        with self.assertRaises(ValueError):
            catalog(portal_type={"query": "Document", "bogus": 1})
        with self.assertRaises(ValueError):
            catalog(Subject={"query": "x", "operator": "xor"})
        with self.assertRaises(CatalogError):
            catalog.unrestrictedSearchResults(portal_type="Document", sort_on="no_such_index")
        with self.assertRaises(CatalogError):
            catalog(portal_type="Document", sort_on="SearchableText")
        # as ZCatalog: DateTime's own error for an unreadable date
        with self.assertRaises(DateTimeError):
            catalog(created={"query": "not a date at all", "range": "min"})
        # text PostgreSQL cannot hold equals nothing (no row holds it)
        self.assertEqual(len(catalog(portal_type="Doc\x00ument")), 0)
        self.assertEqual(len(catalog(portal_type=["\udcff", "Document"])), 30)
        # the snapshot connection is still usable after the errors
        self.assertEqual(len(catalog(id="many")), 1)
        # SQL in a value is a value
        self.assertEqual(len(catalog(portal_type="Document' OR '1'='1")), 0)
        self.assertEqual(len(catalog(id="many", sort_on="sortable_title", b_start=-5, b_size=3)), 0)
        self.assertEqual(len(catalog(portal_type="Document")), 30)

    def test_failed_read_keeps_the_storage_transaction(self):
        """A read that fails in PostgreSQL is rolled back to its savepoint:
        the transaction's own writes and later searches are unharmed."""
        doc = self.portal.many.d0001
        doc.title = "Renamed in this transaction"
        doc.reindexObject()
        conn = connection.storage_instance(self.portal).pg_connection
        with self.assertRaises(psycopg.errors.DivisionByZero):
            connection.fetch(self.catalog, "SELECT 1 / 0", [])
        self.assertEqual(conn.info.transaction_status, psycopg.pq.TransactionStatus.INTRANS)
        self.assertEqual(len(self.catalog(portal_type="Document")), 30)
        # the savepoint is set once per snapshot and kept: a later failure
        # rolls back to it just the same
        self.assertIs(connection._savepoints.get(conn), transaction.get())
        with self.assertRaises(psycopg.errors.DivisionByZero):
            connection.fetch(self.catalog, "SELECT 1 / 0", [])
        self.assertEqual(conn.info.transaction_status, psycopg.pq.TransactionStatus.INTRANS)
        self.assertEqual(len(self.catalog(Title="renamed")), 1)
        transaction.commit()
        # the next snapshot's first read sets its own savepoint, and a
        # failure rolls back to it
        self.assertEqual([b.Title for b in self.catalog(Title="renamed")], ["Renamed in this transaction"])
        self.assertIs(connection._savepoints.get(conn), transaction.get())
        with self.assertRaises(psycopg.errors.DivisionByZero):
            connection.fetch(self.catalog, "SELECT 1 / 0", [])
        self.assertEqual(conn.info.transaction_status, psycopg.pq.TransactionStatus.INTRANS)
        self.assertEqual(len(self.catalog(Title="renamed")), 1)

    def test_failed_read_after_the_snapshot_moved(self):
        """If the storage's snapshot was replaced behind the catalog's back,
        a failed read has no savepoint to return to: it ends the broken
        transaction, and objects and searches still work."""
        self.assertEqual(len(self.catalog(portal_type="Document")), 30)  # sets the savepoint
        conn = connection.storage_instance(self.portal).pg_connection
        conn.execute("COMMIT")
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        with self.assertLogs("plone.pgcatalog", "WARNING"):
            with self.assertRaises(psycopg.errors.DivisionByZero):
                connection.fetch(self.catalog, "SELECT 1 / 0", [])
        self.assertEqual(conn.info.transaction_status, psycopg.pq.TransactionStatus.IDLE)
        self.assertEqual(self.portal.many.d0002.Title(), "Doc 0002")
        self.assertEqual(len(self.catalog(portal_type="Document")), 30)
        transaction.abort()
