"""Searches on streaming replicas: a primary with two standbys of the
test's own (pg_basebackup), their replay paused, the standbys killed and
started again.  A search goes to a replica only once it has replayed the
request's snapshot; else the primary answers, and nothing older than what
the user saw or wrote is ever shown."""

from __future__ import annotations

from pathlib import Path
from test_faults import backend_found
from test_faults import SLEEPING
from test_faults import slow_relevance
from test_faults import striking

from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import replicas
from plone.pgcatalog.connection import READ_DSN_ENV
from plone.pgcatalog.pools import close_pools
from plone.pgcatalog.pools import held_connection
from plone.pgcatalog.pools import release_request_connection
from plone.pgcatalog.testing import create_database
from plone.pgcatalog.testing import drop_database
from plone.pgcatalog.testing import open_pg_db
from plone.pgcatalog.testing import REPLICA_PG_SERVER
from plone.pgcatalog.testing import REPLICA_TESTING
from psycopg import conninfo
from unittest import mock
from zope.component.hooks import setSite
from zope.globalrequest import setRequest
from zopeserver import ADMIN
from zopeserver import ZopeServer

import os
import psycopg
import requests
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import transaction
import unittest


class ReplicaTestCase(unittest.TestCase):
    layer = REPLICA_TESTING

    def setUp(self):
        self.portal = self.layer["portal"]
        self.catalog = self.portal.portal_catalog
        self.cluster = self.layer["pg_cluster"]
        self.dbname = conninfo.conninfo_to_dict(self.layer["pg_dsn"])["dbname"]
        self.read_dsn = self.cluster.read_dsn(self.dbname)
        env = mock.patch.dict(os.environ, {READ_DSN_ENV: self.read_dsn, "PGCATALOG_REPLICA_WAIT": "100"})
        env.start()
        self.addCleanup(env.stop)
        login(self.layer["app"], SITE_OWNER_NAME)
        self.cluster.restore()
        close_pools()
        replicas.forget()

    def tearDown(self):
        transaction.abort()
        release_request_connection()
        setRequest(None)
        close_pools()
        self.cluster.restore()  # before the layer puts the database back

    def document(self, id: str, title: str):
        return api.content.create(container=self.portal, type="Document", id=id, title=title)

    def found(self, **query) -> list[str]:
        """Ids a search in a request of its own finds."""
        setRequest(self.layer["request"])
        try:
            return sorted(b.getId for b in self.catalog(**query))
        finally:
            release_request_connection()
            setRequest(None)

    def replicas_back(self) -> None:
        """Every standby running and caught up, and the time passed after
        which the catalog asks a server it left alone again."""
        self.cluster.restore()
        time.sleep(replicas.RETRY_AFTER)

    def standby_ports(self) -> set[int]:
        return {self.cluster.standby_port(i) for i in range(self.cluster.count)}


class RoutingTest(ReplicaTestCase):
    def test_searches_go_to_a_replica_that_has_replayed_the_snapshot(self):
        self.document("quartz", "Quartz")
        transaction.commit()
        self.cluster.catch_up()  # (waiting for replay is the next test's)
        setRequest(self.layer["request"])
        self.assertEqual([b.getId for b in self.catalog(SearchableText="quartz")], ["quartz"])
        self.assertIn(int(held_connection().info.port), self.standby_ports())
        self.assertEqual(len(self.catalog(portal_type="Document", Title="quartz")), 1)
        self.assertEqual(dict(replicas.STATS), {"replica": replicas.STATS["replica"]})
        self.assertGreaterEqual(replicas.STATS["replica"], 2)

    def test_facets_suggestions_and_snippets_on_a_replica(self):
        """The additions read a replica too, with the security terms:
        Anonymous counts, is offered and reads nothing of a private page."""
        self.portal.portal_workflow.setChainForPortalTypes(("Document",), "simple_publication_workflow")
        public = self.document("quartzite", "Quartzite ridge")
        api.content.transition(obj=public, transition="publish")
        self.document("quartzose", "Quartzose vault notes")  # private
        transaction.commit()
        self.cluster.catch_up()

        def additions(user):
            setRequest(self.layer["request"])
            if user is None:
                logout()
            try:
                facets = self.catalog.facetCounts(["review_state"], SearchableText="quartz*")
                return (
                    dict(facets["review_state"].counts),
                    self.catalog.suggestions(SearchableText="quartzos"),
                    [b.snippet() for b in self.catalog(SearchableText="quartz*", sort_on="id")],
                    int(held_connection().info.port),
                )
            finally:
                release_request_connection()
                setRequest(None)
                login(self.layer["app"], SITE_OWNER_NAME)

        counts, offered, snippets, port = additions(None)
        self.assertIn(port, self.standby_ports())
        self.assertEqual(counts, {"published": 1})
        self.assertNotIn("quartzose", " ".join(offered))
        self.assertEqual(len(snippets), 1)
        self.assertNotIn("vault", snippets[0].lower())
        counts, offered, snippets, port = additions(SITE_OWNER_NAME)
        self.assertIn(port, self.standby_ports())
        self.assertEqual(counts, {"published": 1, "private": 1})
        self.assertIn("quartzose", offered)
        self.assertIn("vault", " ".join(snippets).lower())
        self.assertEqual(set(replicas.STATS), {"replica"})

    def test_a_search_waits_for_the_replica_to_replay_the_users_commit(self):
        """Replay paused on both standbys while the user saves; resumed
        50 ms later: the search waits for it, and a replica answers."""
        for index in range(2):
            self.cluster.pause(index)
        self.document("saved", "Saved just now")
        transaction.commit()
        resume = threading.Timer(0.05, lambda: [self.cluster.resume(i) for i in range(2)])
        resume.start()
        self.addCleanup(resume.cancel)
        with mock.patch.dict(os.environ, {"PGCATALOG_REPLICA_WAIT": "10000"}):
            self.assertEqual(self.found(Title="saved"), ["saved"])
        self.assertEqual(dict(replicas.STATS), {"replica": 1})

    def test_lag_past_the_wait_leaves_the_search_to_the_primary(self):
        """Nothing stale: a page deleted and one added while both replicas
        lag are seen as the user's snapshot has them, from the primary;
        once the replicas catch up they serve again."""
        self.document("old", "Granite old")
        transaction.commit()
        self.cluster.catch_up()
        for index in range(2):
            self.cluster.pause(index)
        api.content.delete(self.portal["old"])  # (its link check searches a replica)
        self.document("new", "Granite new")
        transaction.commit()
        replicas.forget()
        for _ in range(3):
            self.assertEqual(self.found(SearchableText="granite"), ["new"])
        self.assertEqual(replicas.STATS["replica"], 0)
        self.assertGreaterEqual(replicas.STATS["lagging"], 1)
        self.replicas_back()
        self.assertEqual(self.found(SearchableText="granite"), ["new"])
        self.assertEqual(replicas.STATS["replica"], 1)

    def test_a_transaction_that_wrote_reads_the_primary(self):
        """Its own changes are on the primary alone: its searches go there
        at once, without asking a replica."""
        self.document("draft", "Draft")
        transaction.commit()
        for index in range(2):
            self.cluster.pause(index)
        self.portal["draft"].setTitle("Draft marble")
        self.portal["draft"].reindexObject()
        self.assertEqual([b.getId for b in self.catalog(Title="marble")], ["draft"])
        transaction.abort()
        self.portal["draft"].description = "an object changed, no catalog change yet"
        self.assertEqual([b.getId for b in self.catalog(Title="draft")], ["draft"])
        self.assertEqual(dict(replicas.STATS), {})

    def test_another_instance_reads_the_commit_of_the_request_before(self):
        """The redirect after a save, on another Zope instance (a ZODB of
        its own on the same database): the next request's search finds
        what was saved, every time, while the standbys replay as fast as
        they can; none of the answers comes from a replica behind it."""
        other = open_pg_db(self.layer["pg_dsn"])
        self.addCleanup(other.close)
        misses = []
        # a busy machine (CI runs two suites at once) may replay slower
        # than the default wait: then the primary would answer them all
        wait = mock.patch.dict(os.environ, {"PGCATALOG_REPLICA_WAIT": "2000"})
        wait.start()
        self.addCleanup(wait.stop)
        for i in range(30):
            self.document(f"ryw{i}", f"Saved {i}")
            transaction.commit()
            conn = other.open()
            try:
                site = conn.root()["Application"]["plone"]
                setSite(site)
                found = site.portal_catalog.unrestrictedSearchResults(getId=f"ryw{i}")
                if len(found) != 1:
                    misses.append(i)
            finally:
                setSite(self.portal)
                conn.transaction_manager.abort()
                conn.close()
        self.assertEqual(misses, [])
        self.assertGreater(replicas.STATS["replica"], 0)


class FaultsTest(ReplicaTestCase):
    def test_killed_replicas_leave_searches_to_the_primary(self):
        self.document("basalt", "Basalt")
        transaction.commit()
        self.cluster.catch_up()
        self.assertEqual(self.found(Title="basalt"), ["basalt"])  # a pooled connection to a standby
        for index in range(2):
            self.cluster.stop_standby(index)
        api.content.delete(self.portal["basalt"])
        self.document("pumice", "Pumice")
        transaction.commit()
        for _ in range(3):
            self.assertEqual(self.found(portal_type="Document"), ["pumice"])
        self.assertGreaterEqual(replicas.STATS["unavailable"], 1)
        replicas.forget()
        self.replicas_back()
        self.assertEqual(self.found(portal_type="Document"), ["pumice"])
        self.assertEqual(replicas.STATS["replica"], 1)

    def test_one_replica_killed_the_other_serves(self):
        self.document("slate", "Slate")
        transaction.commit()
        self.cluster.catch_up()
        for _ in range(4):  # connections to both standbys in the pool
            self.assertEqual(self.found(Title="slate"), ["slate"])
        self.cluster.stop_standby(0)
        replicas.forget()
        # finding the dead one out costs a search or a second (a pool that
        # gives no connection within CONNECT_WAIT leaves the read DSN alone
        # for RETRY_AFTER: on a loaded machine it may), then the other serves
        deadline = time.monotonic() + 3 * (replicas.CONNECT_WAIT + replicas.RETRY_AFTER)
        while not replicas.STATS["replica"] and time.monotonic() < deadline:
            self.assertEqual(self.found(Title="slate"), ["slate"])
        replicas.STATS.clear()
        for _ in range(10):
            self.assertEqual(self.found(Title="slate"), ["slate"])
        self.assertGreaterEqual(replicas.STATS["replica"], 9, dict(replicas.STATS))

    def test_a_replay_conflict_leaves_the_search_to_the_primary(self):
        """A standby cancels a read that holds up its replay (here at once:
        ``max_standby_streaming_delay`` 0; 30 s by default): a lock the
        primary took on a table the search reads.  The primary answers the
        same search, without an error."""
        self.document("tuff", "Tuff")
        transaction.commit()
        for index in range(2):
            self.cluster.configure_standby(index, max_standby_streaming_delay="0")
            self.addCleanup(self.cluster.configure_standby, index, max_standby_streaming_delay=None)
        primary = self.layer["pg_dsn"]
        standbys = [self.cluster.standby_dsn(i, self.dbname) for i in range(2)]

        sleeping = backend_found(standbys, SLEEPING)  # a standby's backend in the search
        # the word's rows counted once (a word held by so few rows is then
        # scored whole at once, in the one statement that is to conflict)
        self.assertEqual(self.found(SearchableText="tuff"), ["tuff"])
        transaction.abort()
        replicas.STATS.clear()

        with slow_relevance(primary) as put_back:
            self.cluster.catch_up()
            close_pools()  # no session with a plan made with the function as it was
            transaction.abort()

            def conflict(pid: int) -> None:
                put_back()  # (the sleeping search keeps the function it began with)
                with psycopg.connect(primary) as conn:
                    conn.execute("SET lock_timeout = '10s'")
                    conn.execute("LOCK TABLE pgcatalog_text_stats IN ACCESS EXCLUSIVE MODE")

            started = time.monotonic()
            with striking(sleeping, conflict):
                found = self.found(SearchableText="tuff")
        self.assertEqual(found, ["tuff"])
        self.assertEqual(replicas.STATS["conflict"], 1)
        self.assertEqual(replicas.STATS["replica"], 0)
        self.assertLess(time.monotonic() - started, 25)  # not one sleep of 30 s


def standby_statements(cluster, dbname: str) -> int:
    """Transactions the standbys ran in *dbname* (each search one)."""
    total = 0
    for index in range(cluster.count):
        with psycopg.connect(cluster.standby_dsn(index), autocommit=True) as conn:
            total += conn.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", [dbname]
            ).fetchone()[0]
    return total


EDITOR = ("editor", "editor-password-1")


class TwoInstancesTest(unittest.TestCase):
    """Over HTTP: two Zope instances (zope.conf, runwsgi) on one primary
    with the same replicas, a site made by the demo's setup in a new
    database; an editor saves on one and searches on the other at once,
    as Anonymous and as herself."""

    layer = REPLICA_PG_SERVER

    def setUp(self):
        self.cluster = self.layer["pg_cluster"]
        self.cluster.restore()
        self.addCleanup(self.cluster.restore)
        self.dbname, dsn = create_database(self.layer["pg_server_dsn"])
        self.addCleanup(drop_database, self.layer["pg_server_dsn"], self.dbname)
        var = Path(tempfile.mkdtemp(prefix="pgcatalog-replicas-"))
        self.addCleanup(shutil.rmtree, var, ignore_errors=True)
        subprocess.run(
            [str(Path(sys.executable).parent / "pgcatalog-demo"), "--setup-only", "--var", str(var)],
            env={**os.environ, "PGCATALOG_DSN": dsn},
            check=True,
            capture_output=True,
        )
        env = mock.patch.dict(os.environ, {READ_DSN_ENV: self.cluster.read_dsn(self.dbname)})
        env.start()
        self.addCleanup(env.stop)
        self.servers = []
        for name in ("a", "b"):
            server = ZopeServer(var / name, dsn)
            server.start(timeout=120)
            self.addCleanup(server.stop)
            self.servers.append(server)
        site = f"{self.servers[0].url}/Plone"
        admin = requests.Session()
        admin.auth = ADMIN
        admin.headers["Accept"] = "application/json"
        for method, url, body in (
            ("POST", site, {"@type": "Folder", "id": "reports", "title": "Reports"}),
            (
                "POST",
                f"{site}/@users",
                {"username": EDITOR[0], "email": "e@example.org", "password": EDITOR[1]},
            ),
            (
                "POST",
                f"{site}/reports/@sharing",
                {
                    "entries": [
                        {
                            "id": EDITOR[0],
                            "type": "user",
                            "roles": {"Contributor": True, "Editor": True, "Reader": True},
                        }
                    ]
                },
            ),
        ):
            response = admin.request(method, url, json=body, timeout=60)
            self.assertLess(response.status_code, 300, response.text[:500])

    def save(self, server: ZopeServer, title: str) -> None:
        response = requests.post(
            f"{server.url}/Plone/reports",
            json={"@type": "Document", "title": title},
            auth=EDITOR,
            headers={"Accept": "application/json"},
            timeout=60,
        )
        self.assertEqual(response.status_code, 201, server.tail())

    def total(self, server: ZopeServer, word: str, auth=None) -> int:
        response = requests.get(
            f"{server.url}/Plone/@search",
            params={"SearchableText": word},
            auth=auth,
            headers={"Accept": "application/json"},
            timeout=60,
        )
        self.assertEqual(response.status_code, 200, response.text[:500])
        return response.json()["items_total"]

    def test_save_on_one_instance_search_on_the_other(self):
        first, second = self.servers
        before = standby_statements(self.cluster, self.dbname)
        self.cluster.catch_up()
        violations = []
        for i in range(20):
            word = f"zircon{i}"
            self.save(first, f"Report {word}")
            if self.total(second, word, EDITOR) != 1:
                violations.append(word)
            self.assertEqual(self.total(second, word), 0)  # private: not Anonymous's
        self.assertEqual(violations, [])
        self.assertGreater(standby_statements(self.cluster, self.dbname), before)  # the replicas served
        for index in range(2):
            self.cluster.pause(index)
        self.save(second, "Report zirconlag")
        self.assertEqual(self.total(first, "zirconlag", EDITOR), 1)
        self.assertEqual(self.total(first, "zirconlag"), 0)
        for server in self.servers:
            self.assertEqual(server.errors(), [], server.tail())
        admin = requests.get(
            f"{first.url}/Plone/@search",
            params={"SearchableText": "zircon*"},
            auth=ADMIN,
            headers={"Accept": "application/json"},
            timeout=60,
        )
        self.assertEqual(admin.json()["items_total"], 21)
