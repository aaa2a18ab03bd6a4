"""Limits: a runaway search is cancelled, a full pool fails clearly, and no
request keeps a pooled connection after it ends."""

from helpers import CatalogTestCase
from plone import api
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.pgcatalog import connection
from plone.pgcatalog import kept
from plone.pgcatalog import pools
from plone.pgcatalog import replicas
from plone.pgcatalog.pools import get_pool
from plone.pgcatalog.pools import held_connection
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.errors import CatalogUnavailable
from plone.pgcatalog.errors import SearchTimeout
from plone.testing.zope import Browser
from Products.ZCatalog.ZCatalog import CatalogError
from unittest import mock
from zope.globalrequest import setRequest

import contextlib
import json
import os
import psycopg
import time
import transaction


@contextlib.contextmanager
def slow_relevance(dsn: str):
    """Relevance scoring slowed to two seconds a match, in the database
    (the catalog's SQL function, replaced and put back): a search in
    relevance order then runs past a short statement timeout.  The pages
    this process keeps are forgotten (plone.pgcatalog.kept): the search is
    to run in PostgreSQL, where nothing it reads changed."""
    kept.clear()
    with psycopg.connect(dsn, autocommit=True) as conn:
        (original,) = conn.execute(
            "SELECT pg_get_functiondef('pgcatalog_okapi(float8, float8, float8, float8)'::regprocedure)"
        ).fetchone()
        conn.execute(
            "CREATE OR REPLACE FUNCTION pgcatalog_okapi(f float8, dl float8, meandoclen float8, idf1024 float8) "
            "RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$ BEGIN PERFORM pg_sleep(2); RETURN 0; END $$"
        )
        try:
            yield
        finally:
            conn.execute(original)


class LimitsTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.dsn = storage_dsn(self.portal)
        api.content.create(container=self.portal, type="Document", id="limits", title="Limits")
        transaction.commit()
        pools.close_pools()

    def tearDown(self):
        pools.close_pools()
        setRequest(None)

    def search(self):
        """A search in relevance order."""
        return [b.getPath() for b in self.catalog(SearchableText="limits")]

    def test_statement_timeout_on_the_storage_connection(self):
        expected = self.search()
        with mock.patch.dict(os.environ, {"PGCATALOG_STATEMENT_TIMEOUT": "300"}):
            self.assertEqual(self.search(), expected)  # in time
            with slow_relevance(self.dsn):
                with self.assertRaises(SearchTimeout) as raised:
                    self.search()
            self.assertIsInstance(raised.exception, CatalogError)
            self.assertIn("300 ms", str(raised.exception))
            self.assertIsInstance(raised.exception.__cause__, psycopg.errors.QueryCanceled)
            # the snapshot goes on: searches, and a write, in this transaction
            self.assertEqual(self.search(), expected)
        self.portal["limits"].title = "Limits changed"
        self.portal["limits"].reindexObject()
        transaction.commit()
        self.assertEqual(len(self.catalog(Title="changed")), 1)

    def test_statement_timeout_on_a_pooled_connection(self):
        env = {"PGCATALOG_STATEMENT_TIMEOUT": "300", "PGCATALOG_READ_DSN": self.dsn}
        with mock.patch.dict(os.environ, env):
            expected = self.search()
            with slow_relevance(self.dsn), self.assertRaises(SearchTimeout):
                self.search()
            self.assertEqual(self.search(), expected)

    def test_default_statement_timeout(self):
        """Unset, searches get five seconds; 0 turns the limit off."""
        for i in range(3):  # three matches: six seconds of relevance
            api.content.create(container=self.portal, type="Document", id=f"limits-{i}", title="Limits")
        transaction.commit()
        with mock.patch.dict(os.environ):
            os.environ.pop("PGCATALOG_STATEMENT_TIMEOUT", None)
            with slow_relevance(self.dsn):
                with self.assertRaises(SearchTimeout) as raised:
                    self.search()
                self.assertIn("5000 ms", str(raised.exception))
                transaction.abort()
                os.environ["PGCATALOG_STATEMENT_TIMEOUT"] = "0"
                self.assertEqual(len(self.catalog(SearchableText="limits", getId="limits")), 1)  # 2 s

    def test_full_replica_pool_leaves_the_search_to_the_primary(self):
        """Replicas' pool full (another worker holds its only connection):
        the search waits ``replica-wait``, not ``pool-timeout``, and the
        primary answers it."""
        env = {
            "PGCATALOG_READ_DSN": self.dsn,
            "PGCATALOG_POOL_MAX": "1",
            "PGCATALOG_POOL_TIMEOUT": "30",
            "PGCATALOG_REPLICA_WAIT": "200",
        }
        expected = ["/".join(self.portal["limits"].getPhysicalPath())]
        with mock.patch.dict(os.environ, env):
            pool = get_pool(self.dsn)
            taken = pool.getconn()
            try:
                replicas.forget()
                started = time.monotonic()
                self.assertEqual(self.search(), expected)
                self.assertLess(time.monotonic() - started, 10)
                self.assertEqual(replicas.STATS["unavailable"], 1)
            finally:
                pool.putconn(taken)
            replicas.forget()
            self.assertEqual(self.search(), expected)
            self.assertEqual(replicas.STATS["replica"], 1)

    def test_full_pool_fails_clearly(self):
        """Without a storage to fall back on, a read that waited
        ``pool-timeout`` for a pooled connection in vain says so."""
        env = {"PGCATALOG_READ_DSN": self.dsn, "PGCATALOG_POOL_MAX": "1", "PGCATALOG_POOL_TIMEOUT": "0.5"}
        with mock.patch.dict(os.environ, env):
            pool = get_pool(self.dsn)
            taken = pool.getconn()  # another worker holds the only connection
            try:
                with self.assertRaises(CatalogUnavailable) as raised:
                    connection.fetch(object(), "SELECT 1", [])
                self.assertIn("0.5 s", str(raised.exception))
            finally:
                pool.putconn(taken)
            self.assertEqual(connection.fetch(object(), "SELECT 1", []), [(1,)])

    def test_requests_give_their_connection_back(self):
        """Many requests, each searching on the pool: at the end every
        connection is back in the pool and this thread holds none."""
        env = {"PGCATALOG_READ_DSN": self.dsn, "PGCATALOG_POOL_MAX": "2", "PGCATALOG_POOL_TIMEOUT": "5"}
        with mock.patch.dict(os.environ, env):
            browser = Browser(self.layer["app"])
            browser.handleErrors = False
            browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
            browser.addHeader("Accept", "application/json")
            for n in range(60):
                browser.open(self.portal.absolute_url() + f"/@search?SearchableText=limits&b_start={n % 3}")
                self.assertIsNone(held_connection())
            self.assertEqual(json.loads(browser.contents)["items_total"], 1)
            stats = get_pool(self.dsn).get_stats()
            self.assertEqual(stats["pool_available"], stats["pool_size"], stats)
            self.assertEqual(stats.get("requests_waiting", 0), 0, stats)
