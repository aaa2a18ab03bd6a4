"""The catalog swapped into plone.app.testing, for Plone's own test suites.

Installed before zope-testrunner loads a suite, it changes two things and
nothing in the suites:

- every ZODB a layer stacks (``plone.testing.zodb.stackDemoStorage``) is a
  zodb-pgjsonb one: the first a fresh PostgreSQL database, each one stacked
  on it a snapshot of that database, put back when the layer or test closes
  it (as popping a DemoStorage would);
- ``PloneFixture`` loads plone.pgcatalog's ZCML and installs
  ``plone.pgcatalog:default`` on the site it makes.

Every test whose layer has a portal is checked: its ``portal_catalog`` must
be plone.pgcatalog's tool on a zodb-pgjsonb storage, or the test errors.
The number checked is written to ``$PGCATALOG_UPSTREAM_CHECKED``, so a run
that silently tested ZCatalog shows.
"""

from __future__ import annotations

from plone.pgcatalog import testing
from plone.pgcatalog.pools import close_pools

import atexit
import os
import shutil
import tempfile
import ZODB


CHECKED_ENV = "PGCATALOG_UPSTREAM_CHECKED"
checked = 0
made: set[str] = set()  # the databases made here and not dropped yet


class PGServer:
    """The server of ``PGCATALOG_TEST_DSN``, or an embedded one started on
    first use and removed at exit."""

    dsn: str | None = None

    @classmethod
    def get(cls) -> str:
        if cls.dsn is None:
            cls.dsn = os.environ.get(testing.TEST_DSN_ENV)
        if cls.dsn is None:
            import pgserver

            tmp = tempfile.mkdtemp(prefix="pgcatalog-upstream-pg-")
            server = pgserver.get_server(tmp, cleanup_mode="stop")
            cls.dsn = server.get_uri()

            def stop() -> None:
                server.cleanup()
                shutil.rmtree(tmp, ignore_errors=True)

            atexit.register(stop)
        return cls.dsn


class StackedDB(ZODB.DB):
    """A ZODB on PostgreSQL that, once closed, leaves the database as it
    found it: dropped if it made it, else restored from its snapshot."""

    def __init__(self, dsn: str, below: StackedDB | None):
        self.pg_dsn = dsn
        self.below = below
        self.pg_name: str | None = None
        self.snapshot = testing.Snapshot(dsn) if below is not None else None
        super().__init__(testing.open_pg_storage(dsn), cache_size=2000)

    @classmethod
    def fresh(cls) -> StackedDB:
        server = PGServer.get()
        name, dsn = testing.create_database(server)
        db = cls(dsn, None)
        db.pg_name = name
        made.add(name)
        return db

    def close(self) -> None:
        super().close()
        if self.snapshot is not None and self.below is not None:
            self.snapshot.restore(self.below)
            self.snapshot.close()
        elif self.pg_name is not None:
            close_pools()
            testing.drop_database(PGServer.get(), self.pg_name)
            made.discard(self.pg_name)


def drop_left() -> None:
    """Drop the databases of layers never torn down (zope-testrunner
    leaves a layer set up in a subprocess as it exits)."""
    close_pools()
    for name in sorted(made):
        try:
            testing.drop_database(PGServer.get(), name)
        except Exception:  # noqa: BLE001 (the process is ending: what it can)
            pass


def stack(db: ZODB.DB | None = None, name: str | None = None) -> ZODB.DB:
    """``stackDemoStorage`` on PostgreSQL."""
    if db is None:
        return StackedDB.fresh()
    if isinstance(db, StackedDB):
        return StackedDB(db.pg_dsn, db)
    raise RuntimeError(f"{name}: cannot stack a PostgreSQL snapshot on {db!r}")


def check(portal) -> None:
    """The test's portal has plone.pgcatalog's tool on zodb-pgjsonb."""
    global checked
    from plone.pgcatalog.tool import PGCatalogTool
    from zodb_pgjsonb.storage import PGJsonbStorage

    catalog = portal.portal_catalog
    storage = portal._p_jar.db().storage
    if not isinstance(catalog, PGCatalogTool) or not isinstance(storage, PGJsonbStorage):
        raise AssertionError(f"not swapped in: {type(catalog).__name__} on {type(storage).__name__}")
    checked += 1


def report() -> None:
    path = os.environ.get(CHECKED_ENV)
    if path:
        with open(path, "a") as f:  # a layer's subprocess adds its own line
            f.write(f"{checked}\n")


def install() -> None:
    from plone.app.testing import layers
    from plone.testing import zodb
    from zope.configuration import xmlconfig

    zodb.stackDemoStorage = stack
    fixture = layers.PloneFixture
    fixture.extensionProfiles = (*fixture.extensionProfiles, "plone.pgcatalog:default")
    set_up_zcml = fixture.setUpZCML

    def setUpZCML(self):
        set_up_zcml(self)
        import plone.pgcatalog

        xmlconfig.file("configure.zcml", plone.pgcatalog, context=self["configurationContext"])

    fixture.setUpZCML = setUpZCML
    lifecycle_set_up = layers.PloneTestLifecycle.testSetUp

    def testSetUp(self):
        lifecycle_set_up(self)
        check(self["portal"])

    layers.PloneTestLifecycle.testSetUp = testSetUp
    atexit.register(report)
    atexit.register(drop_left)
