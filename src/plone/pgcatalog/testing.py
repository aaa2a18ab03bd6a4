"""Test layers: Plone sites on zodb-pgjsonb in a throwaway PostgreSQL.

``PGCATALOG_TEST_DSN`` names a server to use (any database on it, e.g.
``host=localhost dbname=postgres user=postgres``); every layer creates its
own fresh database there and drops it afterwards.  Without it, an embedded
PostgreSQL (the ``pgserver`` package) is started in a temporary directory
and removed at the end.

Both sites have plone.restapi installed.

Layers:

- ``PGCATALOG_FIXTURE``: a Plone site ``plone`` on PGJsonbStorage with
  ``plone.pgcatalog:default`` installed.
- ``PGCATALOG_INTEGRATION_TESTING``: each test aborts.
- ``PGCATALOG_FUNCTIONAL_TESTING``: tests may commit; the database is put
  back to the fixture's state after each test.
- ``DIFFERENTIAL_FIXTURE`` / ``DIFFERENTIAL_TESTING``: the same plus a stock
  ZCatalog site ``zplone`` in the same database, for side-by-side tests.
- ``HISTORY_DIFFERENTIAL_TESTING``: both sites on a history-preserving
  storage, for undo.
- ``FAULTS_TESTING``: the site on a server of the layer's own, which fault
  tests stop and restart.
- ``REPLICA_PG_SERVER`` / ``REPLICA_TESTING``: a primary with two
  streaming standbys of the layer's own (``pg_cluster``), and the site on
  the primary, for searches on replicas.
"""

from __future__ import annotations

from plone.app.testing import PloneFixture
from plone.app.testing.layers import IntegrationTesting
from plone.testing import Layer
from plone.testing import zca
from plone.pgcatalog.schema import NOTE_EVERYTHING
from plone.testing import zope
from psycopg import conninfo
from zope.configuration import xmlconfig

import os
import psycopg
import shutil
import tempfile
import transaction
import uuid
import ZODB


TEST_DSN_ENV = "PGCATALOG_TEST_DSN"

SNAPSHOT_TABLES = (
    "transaction_log",
    "object_state",
    "blob_state",
    "pgcatalog_counter",
    "pgcatalog_changes",
    "pgcatalog_commits",
    "pgcatalog_shared",
)
HISTORY_TABLES = ("object_history", "pack_state")
ALL_TABLES = SNAPSHOT_TABLES + HISTORY_TABLES


def exists(conn: psycopg.Connection, table: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]


def column_names(conn: psycopg.Connection, table: str) -> list[str]:
    """The table's columns (but generated ones), quoted."""
    names = conn.execute(
        "SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = %s::regclass"
        " AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        (table,),
    ).fetchall()
    return [name for (name,) in names]


def key_names(conn: psycopg.Connection, table: str) -> list[str]:
    """The columns of the table's primary key, quoted (none without one)."""
    names = conn.execute(
        "SELECT quote_ident(a.attname) FROM pg_index i"
        " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
        " WHERE i.indrelid = %s::regclass AND i.indisprimary ORDER BY a.attnum",
        (table,),
    ).fetchall()
    return [name for (name,) in names]


class PGServerLayer(Layer):
    """A PostgreSQL server: the one ``PGCATALOG_TEST_DSN`` names, or an
    embedded throwaway one."""

    def setUp(self):
        dsn = os.environ.get(TEST_DSN_ENV)
        self._server = self._tmp = None
        if not dsn:
            import pgserver

            self._tmp = tempfile.mkdtemp(prefix="pgcatalog-test-pg-")
            self._server = pgserver.get_server(self._tmp, cleanup_mode="stop")
            dsn = self._server.get_uri()
        self["pg_server_dsn"] = dsn

    def tearDown(self):
        del self["pg_server_dsn"]
        if self._server is not None:
            self._server.cleanup()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


PG_SERVER = PGServerLayer(name="plone.pgcatalog:PGServer")


def create_database(server_dsn: str) -> tuple[str, str]:
    """Create a fresh database; return its name and DSN."""
    name = "pgcatalog_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, conninfo.make_conninfo(server_dsn, dbname=name)


def drop_database(server_dsn: str, name: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def open_pg_storage(dsn: str, history_preserving: bool = False):
    """A new PGJsonbStorage with the catalog's processor."""
    from plone.pgcatalog.processor import ensure_processor
    from zodb_pgjsonb.storage import PGJsonbStorage

    storage = PGJsonbStorage(dsn, cache_warm_pct=0, pool_max_size=20, history_preserving=history_preserving)
    ensure_processor(storage)
    return storage


def open_pg_db(dsn: str, history_preserving: bool = False) -> ZODB.DB:
    """A ZODB on a new PGJsonbStorage with the catalog's processor."""
    return ZODB.DB(open_pg_storage(dsn, history_preserving), cache_size=2000)


class PGStartup(zope.Startup):
    """Zope started on a ZODB in a fresh PostgreSQL database."""

    defaultBases = (PG_SERVER, zca.LAYER_CLEANUP)
    history_preserving = False

    def setUpDatabase(self):
        super().setUpDatabase()
        self["zodbDB"].close()
        self._dbname, dsn = create_database(self["pg_server_dsn"])
        self["pg_dsn"] = dsn
        self["zodbDB"] = open_pg_db(dsn, self.history_preserving)

    def tearDownDatabase(self):
        super().tearDownDatabase()
        del self["pg_dsn"]
        from plone.pgcatalog.pools import close_pools

        close_pools()
        drop_database(self["pg_server_dsn"], self._dbname)


PG_STARTUP = PGStartup(name="plone.pgcatalog:Startup")


class PGHistoryStartup(PGStartup):
    """The same on a history-preserving storage (undo)."""

    history_preserving = True


PG_HISTORY_STARTUP = PGHistoryStartup(name="plone.pgcatalog:HistoryStartup")


class Snapshot:
    """A copy of the tables, kept in the database, to put it back after a
    test.

    The copy is a schema of unlogged tables of its own.  A restore rewrites
    only the rows that differ from it (a test changes a few rows of a
    site's thousand: rewriting them all, with their GIN indexes, was most
    of a functional test's time).  A catalog installed after the snapshot
    is dropped on restore.  :meth:`close` drops the copy.
    """

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.schema = f"test_snapshot_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(dsn, autocommit=True) as conn:
            self.tables = tuple(table for table in ALL_TABLES if exists(conn, table))
            # its columns now: the catalog's, once installed, come later
            self.columns = {table: column_names(conn, table) for table in self.tables}
            self.keys = {table: key_names(conn, table) for table in self.tables}
            with conn.transaction():
                conn.execute(f"CREATE SCHEMA {self.schema}")
                for table in self.tables:
                    listed = ", ".join(self.columns[table])
                    conn.execute(
                        f"CREATE UNLOGGED TABLE {self.schema}.{table} AS SELECT {listed} FROM {table}"
                    )
                    conn.execute(f"ANALYZE {self.schema}.{table}")

    def restore(self, db: ZODB.DB) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            with conn.transaction():
                if "pgcatalog_counter" not in self.tables and exists(conn, "pgcatalog_counter"):
                    # installed since: back to a database without the catalog
                    from plone.pgcatalog.uninstall import _drop_sql
                    from plone.pgcatalog.uninstall import _OBJECTS

                    conn.execute(_drop_sql([what for (what,) in conn.execute(_OBJECTS)]))
                conn.execute(NOTE_EVERYTHING)  # (nothing for the change log)
                for table in reversed(ALL_TABLES):
                    if table in self.tables:
                        conn.execute(self._delete_changed(table))
                    elif exists(conn, table):
                        conn.execute(f"DELETE FROM {table}")
                for table in self.tables:
                    conn.execute(self._insert_missing(table))
        storage = db.storage
        storage.clear_caches()

        def forget(connection):
            load_cache = getattr(connection._storage, "_load_cache", None)
            if load_cache is not None:
                load_cache.clear()
            connection.cacheMinimize()

        db._connectionMap(forget)

    def close(self) -> None:
        """Drop the copy (the layer's database may be gone already)."""
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
        except psycopg.OperationalError:
            pass

    def _delete_changed(self, table: str) -> str:
        """DELETE of *table*'s rows that are not in the copy as they are."""
        names, keys = self.columns[table], self.keys[table]
        if not keys:
            return f"DELETE FROM {table}"
        same_key = " AND ".join(f"s.{k} = t.{k}" for k in keys)
        now = ", ".join(f"t.{n}" for n in names)
        then = ", ".join(f"s.{n}" for n in names)
        return (
            f"DELETE FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM {self.schema}.{table} s "
            f"WHERE {same_key} AND ROW({then}) IS NOT DISTINCT FROM ROW({now}))"
        )

    def _insert_missing(self, table: str) -> str:
        """INSERT of the copy's rows that *table* lacks (all of them where
        it has no key: :meth:`_delete_changed` emptied it)."""
        listed = ", ".join(self.columns[table])
        copied = f"SELECT {listed} FROM {self.schema}.{table} s"
        keys = self.keys[table]
        if keys:
            same_key = " AND ".join(f"s.{k} = t.{k}" for k in keys)
            copied += f" WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {same_key})"
        # (identity columns too: a row keeps its id, as the COPY did)
        return f"INSERT INTO {table} ({listed}) OVERRIDING SYSTEM VALUE {copied}"


# What both sites of a differential test install: Plone's own profiles and
# plone.restapi (REST clients and Volto search through it)
SITE_PROFILES = (*PloneFixture.extensionProfiles, "plone.restapi:default")


class PGCatalogFixture(PloneFixture):
    """A Plone site on PostgreSQL with plone.pgcatalog installed.

    Unlike ``PLONE_FIXTURE`` no DemoStorage is stacked: the site is written
    to PostgreSQL, through the catalog's state processor.
    """

    defaultBases = (PG_STARTUP,)
    extensionProfiles = (*SITE_PROFILES, "plone.pgcatalog:default")

    def setUp(self):
        self.setUpZCML()
        with zope.zopeApp() as app:
            self.setUpProducts(app)
            self.setUpDefaultContent(app)
        self["pg_snapshot"] = Snapshot(self["pg_dsn"])

    def tearDown(self):
        self["pg_snapshot"].close()
        del self["pg_snapshot"]
        with zope.zopeApp() as app:
            self.tearDownProducts(app)
        self.tearDownZCML()

    def setUpZCML(self):
        super().setUpZCML()
        import plone.pgcatalog
        import plone.restapi

        for package in (plone.restapi, plone.pgcatalog):
            xmlconfig.file("configure.zcml", package, context=self["configurationContext"])


PGCATALOG_FIXTURE = PGCatalogFixture(name="plone.pgcatalog:Fixture")


class PGFunctionalTesting(IntegrationTesting):
    """Tests may commit; afterwards the database is restored from the
    fixture's snapshot and every cache is emptied."""

    def testSetUp(self):
        super().testSetUp()
        transaction.commit = self._original_commit

    def testTearDown(self):
        super().testTearDown()
        self["pg_snapshot"].restore(self["zodbDB"])


PGCATALOG_INTEGRATION_TESTING = IntegrationTesting(
    bases=(PGCATALOG_FIXTURE,), name="plone.pgcatalog:Integration"
)
PGCATALOG_FUNCTIONAL_TESTING = PGFunctionalTesting(
    bases=(PGCATALOG_FIXTURE,), name="plone.pgcatalog:Functional"
)


class CreationOrderDocids:
    """Stands in for the ``randint`` of ``Products.ZCatalog.Catalog`` so that
    the stock catalog's record ids follow the order the objects were
    catalogued in.

    ZCatalog breaks ties in relevance order by record id, and draws a new
    random base for its ids whenever its volatile ``_v_nextid`` is gone (the
    catalog ghosted, another thread's connection, every 4,000 ids): ties then
    come out in an order no other catalog can repeat.  Ours breaks them by
    the object's id, which grows as objects are made.  Each draw here is a
    new base above every earlier one, so the stock order is the order of
    cataloguing, and a differential test of relevance compares something
    both define."""

    step = 4_000  # ZCatalog draws again at every multiple of 4,000

    def __init__(self) -> None:
        self.base = 0

    def __call__(self, low: int, high: int) -> int:
        self.base += self.step
        return self.base


class DifferentialFixture(Layer):
    """Adds a stock ZCatalog Plone site ``zplone`` next to ``plone``, whose
    record ids follow the order of cataloguing (:class:`CreationOrderDocids`)."""

    defaultBases = (PGCATALOG_FIXTURE,)

    def setUp(self):
        from Products.ZCatalog import Catalog

        self["zcatalog_randint"] = Catalog.randint
        Catalog.randint = CreationOrderDocids()
        from plone.app.testing import PLONE_SITE_TITLE
        from plone.app.testing import SITE_OWNER_NAME
        from plone.app.testing.helpers import login
        from Products.CMFPlone.factory import addPloneSite

        with zope.zopeApp() as app:
            login(app, SITE_OWNER_NAME)
            addPloneSite(
                app,
                "zplone",
                title=PLONE_SITE_TITLE,
                setup_content=False,
                default_language="en",
                extension_ids=SITE_PROFILES,
            )
        self["pg_snapshot"] = Snapshot(self["pg_dsn"])

    def tearDown(self):
        from Products.ZCatalog import Catalog

        Catalog.randint = self["zcatalog_randint"]
        del self["zcatalog_randint"]
        self["pg_snapshot"].close()
        del self["pg_snapshot"]


DIFFERENTIAL_FIXTURE = DifferentialFixture(name="plone.pgcatalog:Differential")
DIFFERENTIAL_TESTING = PGFunctionalTesting(
    bases=(DIFFERENTIAL_FIXTURE,), name="plone.pgcatalog:DifferentialFunctional"
)

HISTORY_FIXTURE = PGCatalogFixture(bases=(PG_HISTORY_STARTUP,), name="plone.pgcatalog:HistoryFixture")
HISTORY_DIFFERENTIAL_FIXTURE = DifferentialFixture(
    bases=(HISTORY_FIXTURE,), name="plone.pgcatalog:HistoryDifferential"
)
HISTORY_DIFFERENTIAL_TESTING = PGFunctionalTesting(
    bases=(HISTORY_DIFFERENTIAL_FIXTURE,), name="plone.pgcatalog:HistoryDifferentialFunctional"
)


class FaultServerLayer(Layer):
    """A PostgreSQL server of this layer's own, always (``PGCATALOG_TEST_DSN``
    is ignored): fault tests kill its backends and restart it, which must
    never hit a server other tests share.

    ``pg_restart`` restarts it on the same data directory and socket; the
    DSN stays valid.
    """

    def setUp(self):
        import pgserver

        self._tmp = tempfile.mkdtemp(prefix="pgcatalog-faults-pg-")
        self._server = pgserver.get_server(self._tmp, cleanup_mode="stop")
        self["pg_server_dsn"] = self._server.get_uri()
        self["pg_restart"] = self.restart
        self["pg_stop"] = self.stop
        self["pg_start"] = self.start
        # a prepared transaction holds locks through a restart, where a
        # session's go with its backend: the faults' dependable lock holder
        with psycopg.connect(self["pg_server_dsn"], autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET max_prepared_transactions = 2")
        self.restart()

    def _pg_ctl(self, *args: str) -> None:
        from pgserver._commands import pg_ctl
        from pgserver.utils import PostmasterInfo

        server = self._server
        pg_ctl(["-w", *args], pgdata=server.pgdata, user=server.system_user, timeout=60)
        if args[-1] != "stop":
            # pgserver stops the postmaster it knows of at cleanup: the new one
            server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)

    def stop(self) -> None:
        """``pg_ctl stop`` in fast mode: backends terminated, nothing listens."""
        self._pg_ctl("-m", "fast", "stop")

    def start(self) -> None:
        """Start the stopped server on its data directory, socket and port."""
        info = self._server.get_postmaster_info()
        options = f'-h "" -k {info.socket_dir} -p {info.port}'
        self._pg_ctl("-o", options, "-l", str(self._server.log), "start")

    def restart(self) -> None:
        """``pg_ctl restart`` in fast mode: every backend is terminated, its
        transaction rolled back; returns once the server accepts connections."""
        self._pg_ctl("-m", "fast", "-l", str(self._server.log), "restart")

    def tearDown(self):
        del self["pg_server_dsn"]
        del self["pg_restart"]
        del self["pg_stop"]
        del self["pg_start"]
        self._server.cleanup()
        shutil.rmtree(self._tmp, ignore_errors=True)


FAULTS_PG_SERVER = FaultServerLayer(name="plone.pgcatalog:FaultsPGServer")


def site_layers(server: Layer, prefix: str) -> tuple[Layer, Layer, Layer]:
    """Zope on a fresh database of *server*'s own, the site there, and
    functional tests of it: ``plone.pgcatalog:<prefix>Startup``,
    ``...Fixture`` and ``...Functional``."""
    startup = PGStartup(bases=(server, zca.LAYER_CLEANUP), name=f"plone.pgcatalog:{prefix}Startup")
    fixture = PGCatalogFixture(bases=(startup,), name=f"plone.pgcatalog:{prefix}Fixture")
    return startup, fixture, PGFunctionalTesting(bases=(fixture,), name=f"plone.pgcatalog:{prefix}Functional")


FAULTS_STARTUP, FAULTS_FIXTURE, FAULTS_TESTING = site_layers(FAULTS_PG_SERVER, "Faults")


class ReplicaServerLayer(Layer):
    """A primary with two streaming standbys of this layer's own, always
    (``PGCATALOG_TEST_DSN`` is ignored): replica tests pause their replay,
    kill them and start them again (:class:`~plone.pgcatalog.cluster.Cluster`).

    ``pg_cluster`` is the cluster; ``pg_server_dsn`` its primary.
    """

    def setUp(self):
        from plone.pgcatalog.cluster import Cluster

        self._cluster = Cluster(standbys=2)
        self._cluster.start()
        self["pg_cluster"] = self._cluster
        self["pg_server_dsn"] = self._cluster.dsn()

    def tearDown(self):
        del self["pg_server_dsn"]
        del self["pg_cluster"]
        self._cluster.close()


REPLICA_PG_SERVER = ReplicaServerLayer(name="plone.pgcatalog:ReplicaPGServer")

REPLICA_STARTUP, REPLICA_FIXTURE, REPLICA_TESTING = site_layers(REPLICA_PG_SERVER, "Replica")
