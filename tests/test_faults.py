"""Database faults: a backend killed (``pg_terminate_backend``) and the
whole server restarted, in the middle of a search and of a commit.

The request that meets the fault fails clearly (a search with
``CatalogUnavailable``, a commit with psycopg's ``AdminShutdown``), the
catalog is left exactly as before, and after ``transaction.abort()`` the
next search and the next commit work on the same ZODB, on the storage's
connection and on the pool: nothing needs a restart of Zope.  While the
server is down, searches fail saying the database is unavailable (not that
the pool is full).

The layer runs a PostgreSQL server of its own (``FAULTS_TESTING``): these
tests kill backends and restart it.
"""

from collections.abc import Callable
from collections.abc import Iterator
from plone import api
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import kept
from plone.pgcatalog import replicas
from plone.pgcatalog import row
from plone.pgcatalog.connection import READ_DSN_ENV
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.connection import storage_instance
from plone.pgcatalog.errors import CatalogUnavailable
from plone.pgcatalog.pools import close_pools
from plone.pgcatalog.pools import get_pool
from plone.pgcatalog.pools import held_connection
from plone.pgcatalog.pools import release_request_connection
from plone.pgcatalog.testing import FAULTS_TESTING
from plone.pgcatalog.verify import verify
from Products.ZCatalog.ZCatalog import CatalogError
from psycopg_pool import PoolTimeout
from unittest import mock
from zope.globalrequest import setRequest

import contextlib
import os
import psycopg
import threading
import time
import transaction
import unittest


WAIT = 30.0
"""Seconds a fault waits for the backend it strikes (a bound, never reached
when things work)."""

ADMIN_SHUTDOWN = "terminating connection due to administrator command"
"""What PostgreSQL tells a backend's client when it terminates it, for
``pg_terminate_backend`` and for a fast shutdown alike."""

CATALOG_STATE = (
    "SELECT zoid, tid, "
    + ", ".join(f"{column.name}::text" for column in row.COLUMNS)
    + " FROM object_state ORDER BY zoid",
    "SELECT id, value FROM pgcatalog_counter ORDER BY id",
    "SELECT index_name, sum(documents), sum(words) FROM pgcatalog_text_stats GROUP BY 1 ORDER BY 1",
)
"""Everything the catalog keeps in the database: the catalog columns of every
object row, the change counter, the text statistics (summed: commits add
rows the next commit folds)."""

SLEEPING = (
    "SELECT pid FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
)
BLOCKED_BY = "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"


def catalog_state(dsn: str) -> list[list[tuple]]:
    """The catalog's data as committed, to compare before and after a fault."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [conn.execute(sql).fetchall() for sql in CATALOG_STATE]


def terminate(dsn: str, pid: int) -> None:
    """Kill one backend from an admin connection, as an operator would."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        (done,) = conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
    if not done:
        raise AssertionError(f"backend {pid} was not there to terminate")


def backend_found(dsns: str | list[str], sql: str, params: tuple = ()) -> Callable[[], int]:
    """A waiter for the pid *sql* finds on one of *dsns* (polled, at most
    ``WAIT`` seconds)."""
    dsns = [dsns] if isinstance(dsns, str) else dsns

    def wait() -> int:
        deadline = time.monotonic() + WAIT
        conns = [psycopg.connect(dsn, autocommit=True) for dsn in dsns]
        try:
            while time.monotonic() < deadline:
                for conn in conns:
                    found = conn.execute(sql, params).fetchone()
                    if found:
                        return found[0]
                time.sleep(0.02)
        finally:
            for conn in conns:
                conn.close()
        raise AssertionError(f"no backend for {sql!r} {params} within {WAIT} s")

    return wait


@contextlib.contextmanager
def striking(
    find: Callable[[], int], strike: Callable[[int], None], give_up: Callable[[], None] = lambda: None
) -> Iterator[dict]:
    """Run the body while a thread waits for the backend *find* returns and
    then *strike*s it (kill, restart).  Yields a dict that gets the pid.
    If no backend shows up, *give_up* unblocks the body; the thread's
    error is raised after the body."""
    outcome: dict = {}

    def run():
        try:
            outcome["pid"] = find()
        except BaseException as error:
            outcome["error"] = error
            give_up()
            return
        try:
            strike(outcome["pid"])
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=run, name="pgcatalog-fault", daemon=True)
    thread.start()
    try:
        yield outcome
    finally:
        thread.join(WAIT * 3)
        if thread.is_alive():
            raise AssertionError("the fault thread did not finish")
        if "error" in outcome:
            raise outcome["error"]


@contextlib.contextmanager
def slow_relevance(dsn: str) -> Iterator[Callable[[], None]]:
    """Relevance scoring made to sleep 30 s a match (the catalog's SQL
    function, replaced and put back), so a search in relevance order is
    still running when the fault strikes.  Put back on a new connection
    (the server may have restarted meanwhile), at the end or earlier by
    the callable it yields.  The pages this process keeps are forgotten
    (plone.pgcatalog.kept): the search is to run in PostgreSQL, where
    nothing it reads changed."""
    kept.clear()
    signature = "pgcatalog_okapi(float8, float8, float8, float8)"
    with psycopg.connect(dsn, autocommit=True) as conn:
        (original,) = conn.execute(f"SELECT pg_get_functiondef('{signature}'::regprocedure)").fetchone()
        conn.execute(
            "CREATE OR REPLACE FUNCTION pgcatalog_okapi(f float8, dl float8, meandoclen float8, idf1024 float8) "
            "RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$ BEGIN PERFORM pg_sleep(30); RETURN 0; END $$"
        )

    def put_back() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(original)

    try:
        yield put_back
    finally:
        put_back()


LOCKER = "pgcatalog-faults-counter"
"""The global id of the prepared transaction that holds the counter row."""


@contextlib.contextmanager
def counter_locked(dsn: str) -> Iterator[Callable[[], None]]:
    """A prepared transaction holds the catalog's change counter row: a
    commit's vote waits in the catalog's ``finalize``, after the objects and
    their catalog columns were written in its PostgreSQL transaction.

    Prepared, the lock belongs to no backend: a restart terminates every
    backend but keeps the lock, so the commit is still waiting when its
    backend is told to terminate (a session's lock would go with its
    backend, and the commit could go on before being struck).  Yields what
    releases it; it is released after the body in any case.  Waiters show
    it as blocking pid 0 (``pg_blocking_pids``)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute("SELECT value FROM pgcatalog_counter WHERE id = 1 FOR UPDATE")
        conn.execute(f"PREPARE TRANSACTION '{LOCKER}'")

    def release() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_prepared_xacts WHERE gid = %s", (LOCKER,)).fetchone():
                conn.execute(f"ROLLBACK PREPARED '{LOCKER}'")

    try:
        yield release
    finally:
        release()


class FaultsTest(unittest.TestCase):
    layer = FAULTS_TESTING

    def setUp(self):
        self.portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        self.catalog = self.portal.portal_catalog
        self.dsn = storage_dsn(self.portal)
        api.content.create(container=self.portal, type="Document", id="faults", title="Faults")
        transaction.commit()
        self.path = "/".join(self.portal["faults"].getPhysicalPath())
        close_pools()

    def tearDown(self):
        transaction.abort()
        release_request_connection()
        setRequest(None)
        close_pools()

    # -- the two ways a search reaches the database

    @contextlib.contextmanager
    def reading(self, pooled: bool, in_request: bool = False) -> Iterator[None]:
        """Searches on the storage's connection, or on the pool
        (``PGCATALOG_READ_DSN``), in a request or outside one."""
        with mock.patch.dict(os.environ):
            os.environ.pop(READ_DSN_ENV, None)
            if pooled:
                os.environ[READ_DSN_ENV] = self.dsn
            setRequest(self.layer["request"] if in_request else None)
            try:
                yield
            finally:
                release_request_connection()  # what IPubEnd does
                setRequest(None)

    def search(self, **query) -> list[str]:
        """Paths found; by default a search in relevance order."""
        return sorted(b.getPath() for b in self.catalog(**(query or {"SearchableText": "faults"})))

    # -- what every fault must leave behind

    def assert_clear_search_error(self, error: CatalogUnavailable) -> None:
        self.assertIsInstance(error, CatalogError)
        self.assertIn("The catalog's database is unavailable", str(error))
        self.assertIsInstance(error.__cause__, psycopg.OperationalError)

    def assert_recovers(self) -> None:
        """After the failed request's abort: searches on every path, a commit
        that edits, adds (a new OID) and reindexes, and the catalog checked
        against the content."""
        transaction.abort()
        paths = ((False, False), (True, False), (True, True))
        for pooled, in_request in paths:
            with self.reading(pooled, in_request):
                self.assertEqual(self.search(), [self.path], (pooled, in_request))
        self.portal["faults"].setTitle("Faults recovered")
        self.portal["faults"].reindexObject()
        api.content.create(container=self.portal, type="Document", id="after", title="Aftermath")
        transaction.commit()
        for pooled, in_request in paths:
            with self.reading(pooled, in_request):
                self.assertEqual(self.search(Title="recovered"), [self.path], (pooled, in_request))
                self.assertEqual(len(self.search(Title="aftermath")), 1, (pooled, in_request))
        self.assertIsNone(held_connection())
        # no connection left checked out: once the attempts to connect that
        # an outage left behind are done (a bounded wait), all are back
        pool = get_pool(self.dsn)
        deadline = time.monotonic() + WAIT
        while (stats := pool.get_stats())["pool_available"] < stats[
            "pool_size"
        ] and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(stats["pool_available"], stats["pool_size"], stats)
        report = verify(self.catalog)
        self.assertTrue(report.ok, report.summary())

    # -- faults during a search

    def fault_during_search(
        self, strike: Callable[[int], None], pooled: bool, in_request: bool = False
    ) -> int:
        """A search in relevance order, struck while PostgreSQL runs it;
        returns the pid of the backend that ran it."""
        before = catalog_state(self.dsn)
        with self.reading(pooled, in_request):
            self.assertEqual(self.search(), [self.path])
            with slow_relevance(self.dsn):
                # a new snapshot: a backend that holds its locks from before
                # would run a plan it cached with the function as it was
                transaction.abort()
                with striking(backend_found(self.dsn, SLEEPING), strike) as struck:
                    with self.assertRaises(CatalogUnavailable) as raised:
                        self.search()
        self.assert_clear_search_error(raised.exception)
        self.assertEqual(catalog_state(self.dsn), before)
        return struck["pid"]

    def storage_backend(self) -> int:
        return storage_instance(self.portal).pg_connection.info.backend_pid

    def kill(self, pid: int) -> None:
        terminate(self.dsn, pid)

    def restart(self, pid: int) -> None:
        self.layer["pg_restart"]()

    def test_kill_during_search_on_the_storage_connection(self):
        storage_backend = self.storage_backend()
        killed = self.fault_during_search(self.kill, pooled=False)
        self.assertEqual(killed, storage_backend)  # the search ran in the storage's snapshot
        self.assert_recovers()

    def replica_fault_during_search(self, in_request: bool = False) -> None:
        """The pool serves as a replica (``PGCATALOG_READ_DSN``): its
        backend killed while it runs a search, the primary answers it
        (relevance is put back as the kill strikes), no error."""
        storage_backend = self.storage_backend()
        with self.reading(pooled=True, in_request=in_request):
            self.assertEqual(self.search(), [self.path])
            replicas.forget()
            with slow_relevance(self.dsn) as put_back:

                def strike(pid: int) -> None:
                    put_back()
                    self.kill(pid)

                with striking(backend_found(self.dsn, SLEEPING), strike) as struck:
                    self.assertEqual(self.search(), [self.path])
        self.assertNotEqual(struck["pid"], storage_backend)
        self.assertEqual(replicas.STATS["unavailable"], 1)

    def test_kill_during_search_on_the_pool_in_a_request(self):
        self.replica_fault_during_search(in_request=True)
        self.assert_recovers()

    def test_kill_during_search_on_the_pool_outside_a_request(self):
        self.replica_fault_during_search()
        self.assert_recovers()

    def test_restart_during_search_on_the_storage_connection(self):
        storage_backend = self.storage_backend()
        struck = self.fault_during_search(self.restart, pooled=False)
        self.assertEqual(struck, storage_backend)
        self.assert_recovers()

    def test_restart_during_search_on_the_pool(self):
        self.fault_during_search(self.restart, pooled=True, in_request=True)
        self.assert_recovers()

    def test_searches_while_the_server_is_down(self):
        """A restart that takes a while: searches while nothing listens fail
        at once, or after ``pool-timeout`` on the pool, and say why (not
        that the pool is full); once the server is back the next search and
        the next commit work, on the same pool."""
        self.assertEqual(self.search(), [self.path])  # the storage's snapshot is open
        before = catalog_state(self.dsn)
        self.layer["pg_stop"]()
        try:
            with mock.patch.dict(os.environ, {"PGCATALOG_POOL_TIMEOUT": "1"}):
                with self.assertRaises(CatalogUnavailable) as raised:
                    self.search()  # on the storage's connection, dead since the stop
                self.assert_clear_search_error(raised.exception)
                # the storage's connection is closed now: a search goes to the pool
                attempts = ((False, False), (True, False), (True, True))
                for pooled, in_request in attempts:
                    with self.reading(pooled, in_request), self.assertRaises(CatalogUnavailable) as raised:
                        self.search()
                    error = raised.exception
                    self.assert_clear_search_error(error)
                    self.assertIn("no pooled connection within 1.0 s", str(error))
                    self.assertNotIn("pool-max", str(error))
                    self.assertNotIsInstance(error.__cause__, PoolTimeout)  # what connecting says
        finally:
            self.layer["pg_start"]()
        self.assertEqual(catalog_state(self.dsn), before)
        self.assert_recovers()

    # -- faults during a commit

    def fault_during_commit(self, strike: Callable[[int], None]) -> psycopg.OperationalError:
        """A commit that edits, adds and reindexes, struck while its vote
        waits in the catalog's finalize (its objects already written in
        its PostgreSQL transaction); returns what the commit raised."""
        before = catalog_state(self.dsn)
        self.portal["faults"].setTitle("Faults changed")
        self.portal["faults"].reindexObject()
        api.content.create(container=self.portal, type="Document", id="lost", title="Lost in the fault")
        committing = storage_instance(self.portal).pg_connection.info.backend_pid
        with counter_locked(self.dsn) as release:
            find = backend_found(self.dsn, BLOCKED_BY, (0,))
            with striking(find, strike, give_up=release) as struck:
                with self.assertRaises(psycopg.OperationalError) as raised:
                    transaction.commit()
        self.assertEqual(struck["pid"], committing)
        self.assertEqual(catalog_state(self.dsn), before)
        transaction.abort()
        self.assertEqual(self.portal["faults"].Title(), "Faults")
        self.assertNotIn("lost", self.portal.objectIds())
        return raised.exception

    def test_kill_during_commit(self):
        error = self.fault_during_commit(self.kill)
        self.assertIsInstance(error, psycopg.errors.AdminShutdown)
        self.assertIn(ADMIN_SHUTDOWN, str(error))
        self.assert_recovers()

    def test_restart_during_commit(self):
        error = self.fault_during_commit(self.restart)
        self.assertIsInstance(error, psycopg.errors.AdminShutdown)
        self.assertIn(ADMIN_SHUTDOWN, str(error))
        self.assert_recovers()
