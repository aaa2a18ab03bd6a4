"""Uninstall: ZCatalog back with the same definitions, every item findable,
the catalog's SQL dropped from the database; and installed again."""

from Acquisition import aq_base
from helpers import build_content
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.base.utils import get_installer
from plone.pgcatalog import row
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.processor import retire_processor
from plone.pgcatalog.schema import catalog_installed
from plone.pgcatalog.schema import schema_sql
from plone.pgcatalog.subscribers import database_opened
from plone.pgcatalog.testing import create_database
from plone.pgcatalog.testing import DIFFERENTIAL_TESTING
from plone.pgcatalog.testing import drop_database
from plone.pgcatalog.testing import open_pg_db
from plone.pgcatalog.testing import PG_SERVER
from plone.pgcatalog.tool import PGCatalogTool
from plone.pgcatalog.uninstall import drop_catalog_schema
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFPlone.CatalogTool import CatalogTool
from types import SimpleNamespace
from zope.component import getUtility
from zope.component.hooks import setSite

import persistent.mapping
import psycopg
from plone.browserlayer.utils import registered_layers
from plone.pgcatalog.interfaces import IPGCatalogLayer

import transaction
import unittest
from unittest import mock


def definitions(catalog) -> dict:
    """What must survive a round trip: indexes with their kinds and
    sources, metadata columns, lexicons."""
    indexes = {}
    for name in catalog.indexes():
        index = catalog.Indexes[name]
        indexes[name] = (index.meta_type, tuple(index.getIndexSourceNames()))
    lexicons = sorted(obj.getId() for obj in catalog.objectValues() if obj.meta_type == "ZCTextIndex Lexicon")
    return {"indexes": indexes, "columns": list(catalog.schema()), "lexicons": lexicons}


def findable(site) -> dict:
    catalog = site.portal_catalog
    root = "/".join(site.getPhysicalPath())
    everything = catalog.unrestrictedSearchResults(path=root, sort_on="path")
    return {
        brain.getPath(): (
            brain.Title,
            brain.review_state,
            [b.getPath() for b in catalog.unrestrictedSearchResults(UID=brain.UID)],
            [
                b.getPath()
                for b in catalog.unrestrictedSearchResults(SearchableText=brain.getId, path=brain.getPath())
            ],
        )
        for brain in everything
    }


class RoundTripTest(unittest.TestCase):
    """On the stock site ``zplone``, next to ``plone`` (which keeps using
    the catalog's columns in the same database)."""

    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        self.app = self.layer["app"]
        self.site = self.app.zplone
        setSite(self.site)
        login(self.app, SITE_OWNER_NAME)
        build_content(self.site, seed=5, count=20)
        transaction.commit()

    def rows_under(self, path: str) -> int:
        with psycopg.connect(storage_dsn(self.site)) as conn:
            return conn.execute(
                "SELECT count(*) FROM object_state WHERE idx IS NOT NULL AND starts_with(path, %s)",
                [path + "/"],
            ).fetchone()[0]

    def additions(self) -> tuple[bool, bool]:
        """Whether the profile's registry record ("Relevance" among the
        sort orders) and browser layer (the search page) are there."""
        setSite(self.site)
        record = "plone.app.querystring.field.relevance.sortable" in self.site.portal_registry.records
        return record, IPGCatalogLayer in registered_layers()

    def test_install_uninstall_install(self):
        before, stock_definitions = findable(self.site), definitions(self.site.portal_catalog)
        self.assertGreater(len(before), 20)
        installer = get_installer(self.site, self.layer["request"])
        self.assertTrue(installer.install_product("plone.pgcatalog"))
        transaction.commit()
        self.assertIsInstance(self.site.portal_catalog, PGCatalogTool)
        self.assertEqual(findable(self.site), before)
        self.assertGreaterEqual(self.rows_under("/zplone"), 20)
        self.assertEqual(self.additions(), (True, True))

        self.assertTrue(installer.uninstall_product("plone.pgcatalog"))  # the Add-ons panel's button
        transaction.commit()
        catalog = self.site.portal_catalog
        self.assertIs(type(aq_base(catalog)), CatalogTool)
        self.assertIs(aq_base(getUtility(ICatalogTool)), aq_base(catalog))
        self.assertEqual(
            self.site.portal_setup.getToolsetRegistry().getRequiredToolInfo("portal_catalog")["class"],
            "Products.CMFPlone.CatalogTool.CatalogTool",
        )
        self.assertEqual(definitions(catalog), stock_definitions)
        self.assertEqual(findable(self.site), before)
        self.assertEqual(self.rows_under("/zplone"), 0)  # this site's rows are gone
        self.assertEqual(self.additions(), (False, False))  # no "Relevance" sort, Plone's search page
        # the other site keeps its catalog, and the columns stay for it
        self.assertTrue(catalog_installed(storage_dsn(self.site)))
        self.assertGreater(len(self.app.plone.portal_catalog.unrestrictedSearchResults(path="/plone")), 0)

        self.assertTrue(installer.install_product("plone.pgcatalog"))
        transaction.commit()
        self.assertIsInstance(self.site.portal_catalog, PGCatalogTool)
        self.assertEqual(definitions(self.site.portal_catalog), stock_definitions)
        self.assertEqual(findable(self.site), before)

    def test_uninstall_catalogs_more_items_than_zcatalogs_threshold(self):
        """ZCatalog collects the ZODB cache after every *threshold* (10,000)
        items cataloged in one transaction, through its own jar: the new
        tool must have one before it is filled, or a site of more items
        fails to uninstall."""
        installer = get_installer(self.site, self.layer["request"])
        if not isinstance(self.site.portal_catalog, PGCatalogTool):
            self.assertTrue(installer.install_product("plone.pgcatalog"))
            transaction.commit()
        before = findable(self.site)
        init = CatalogTool.__init__

        def small_threshold(tool, *args, **kwargs):
            init(tool, *args, **kwargs)
            tool.threshold = 5  # this site's 20-odd items stand for 10,000

        with mock.patch.object(CatalogTool, "__init__", small_threshold):
            self.assertTrue(installer.uninstall_product("plone.pgcatalog"))
            transaction.commit()
        self.assertIs(type(aq_base(self.site.portal_catalog)), CatalogTool)
        self.assertEqual(findable(self.site), before)


class TwoSitesTest(unittest.TestCase):
    """Two sites keep their catalogs in one database: each finds, counts
    and clears only its own rows."""

    layer = DIFFERENTIAL_TESTING

    def test_each_site_its_own_rows(self):
        app = self.layer["app"]
        login(app, SITE_OWNER_NAME)
        plone, zplone = app.plone, app.zplone
        build_content(plone, seed=3, count=12)
        build_content(zplone, seed=4, count=15)
        transaction.commit()
        get_installer(zplone, self.layer["request"]).install_product("plone.pgcatalog")
        transaction.commit()
        for site in (plone, zplone):
            setSite(site)
            catalog = site.portal_catalog
            root = "/".join(site.getPhysicalPath())
            everything = catalog.searchAll()
            self.assertGreater(len(everything), 12)
            self.assertTrue(
                all(b.getPath() == root or b.getPath().startswith(root + "/") for b in everything)
            )
            self.assertEqual(len(catalog), len(everything))
            self.assertEqual(len(catalog.unrestrictedSearchResults(path=root)), len(everything))
            self.assertEqual(len(catalog.unrestrictedSearchResults(path="/")), len(everything))
        counts = {site.getId(): len(site.portal_catalog) for site in (plone, zplone)}
        self.assertNotEqual(counts["plone"], counts["zplone"])
        setSite(zplone)
        zplone.portal_catalog.manage_catalogClear()
        transaction.commit()
        self.assertEqual(len(zplone.portal_catalog), 0)
        setSite(plone)
        self.assertEqual(len(plone.portal_catalog), counts["plone"])  # untouched


class DropSchemaTest(unittest.TestCase):
    """The drop on a database of its own: the storage keeps working."""

    layer = PG_SERVER

    def setUp(self):
        self.name, self.dsn = create_database(self.layer["pg_server_dsn"])
        self.db = open_pg_db(self.dsn)  # the catalog's processor registered
        conn = self.db.open()
        conn.root()["data"] = persistent.mapping.PersistentMapping(title="kept")
        transaction.commit()
        conn.close()
        with psycopg.connect(self.dsn) as conn:  # as an install makes it
            conn.execute(schema_sql())

    def tearDown(self):
        self.db.close()
        drop_database(self.layer["pg_server_dsn"], self.name)

    def catalog_objects(self) -> list:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(
                "SELECT relname FROM pg_class WHERE relname LIKE 'pgcatalog%%' "
                "UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE 'pgcatalog%%' "
                "UNION ALL SELECT tgname FROM pg_trigger WHERE tgname LIKE 'pgcatalog%%' "
                "UNION ALL SELECT attname FROM pg_attribute WHERE attrelid = 'object_state'::regclass "
                "AND attname = ANY(%s) AND NOT attisdropped",
                [[c.name for c in row.COLUMNS]],
            ).fetchall()

    def test_rows_left_keep_the_columns(self):
        with psycopg.connect(self.dsn) as conn:
            conn.execute("UPDATE object_state SET idx = '{}' WHERE zoid = 0")
        self.assertFalse(drop_catalog_schema(self.dsn))
        self.assertTrue(catalog_installed(self.dsn))

    def test_drop_leaves_the_storage_working(self):
        self.assertTrue(catalog_installed(self.dsn))
        self.assertGreater(len(self.catalog_objects()), 10)
        self.assertTrue(drop_catalog_schema(self.dsn))
        self.assertEqual(self.catalog_objects(), [])
        self.assertFalse(catalog_installed(self.dsn))
        self.assertFalse(drop_catalog_schema(self.dsn))  # nothing left to drop
        # a restarted site does not hook the catalog in again
        storage = SimpleNamespace(_dsn=self.dsn, register_state_processor=self.fail)
        database_opened(SimpleNamespace(database=SimpleNamespace(storage=storage)))
        # the objects are still there, and new ones are stored
        retire_processor(self.db.storage)
        conn = self.db.open()
        self.assertEqual(conn.root()["data"]["title"], "kept")
        conn.root()["more"] = persistent.mapping.PersistentMapping(title="added")
        transaction.commit()
        conn.close()
        conn = self.db.open()
        self.assertEqual(conn.root()["more"]["title"], "added")
        conn.close()
