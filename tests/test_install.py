"""Installing the profile on a site that already has content.

The stock ZCatalog site ``zplone`` gets content and two add-on indexes,
then ``plone.pgcatalog:default``: every item must stay findable, with the
same answers as ZCatalog gave before the swap, and no ZCatalog objects
may be left reachable in ZODB.
"""

from Acquisition import aq_base
from dataclasses import replace
from datetime import timedelta
from DateTime import DateTime
from helpers import build_content
from helpers import EVERY_FREQUENCY
from helpers import relpaths
from plone import api
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.connection import storage_instance
from plone.pgcatalog.errors import CatalogNotInstalled
from plone.pgcatalog.errors import UnservedIndex
from plone.pgcatalog.row import column_names
from plone.pgcatalog.uninstall import restore_zcatalog
from Products.PluginIndexes.FieldIndex.FieldIndex import FieldIndex
from Products.ZCatalog.ZCatalog import CatalogError
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.testing import DIFFERENTIAL_TESTING
from plone.pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
from plone.pgcatalog.registry import index_defs
from plone.pgcatalog.row import TYPED
from plone.pgcatalog.schema import drop_index_ddl
from plone.pgcatalog.schema import index_ddl
from plone.pgcatalog.schema import SCHEMA_VERSION
from plone.pgcatalog.schema import schema_version
from plone.pgcatalog.tool import PGCatalogTool
from plone.pgcatalog.verify import verify
from OFS.ObjectManager import ObjectManager
from Products.CMFCore.interfaces import ICatalogTool
from plone.base.utils import get_installer
from plone.browserlayer.utils import registered_layers
from plone.browserlayer.utils import unregister_layer
from plone.pgcatalog.interfaces import IPGCatalogLayer
from Products.ZCTextIndex.ZCTextIndex import PLexicon
from plone.event.interfaces import IEvent
from plone.indexer import indexer
from zope.component import getGlobalSiteManager
from zope.component import getUtility
from zope.component.hooks import setSite

import psycopg
import re
import transaction
import unittest


class ExtraKeyword:
    indexed_attrs = "Subject"


class ExtraRecurring:
    recurdef = "recurrence"
    until = ""


def snapshot(site):
    """What the catalog answers about *site*, in comparable form."""
    catalog = site.portal_catalog
    root = "/".join(site.getPhysicalPath())
    everything = catalog.unrestrictedSearchResults(path=root, sort_on="path")
    return {
        "paths": relpaths(site, everything),
        "meta": {
            brain.getPath(): (brain.Title, brain.review_state, brain.UID, brain.Subject, brain.modified)
            for brain in everything
        },
        "by_uid": {
            brain.UID: relpaths(site, catalog.unrestrictedSearchResults(UID=brain.UID))
            for brain in everything
        },
        "addon_keyword": relpaths(
            site, catalog.unrestrictedSearchResults(my_subjects="alpha", sort_on="path")
        ),
        "addon_recurring": relpaths(
            site,
            catalog.unrestrictedSearchResults(
                my_start={"query": DateTime() + 0.5, "range": "min"}, sort_on="path"
            ),
        ),
    }


@indexer(IEvent)
def my_start(obj):
    """An add-on's computed index value (an event's start, one day later)."""
    return obj.start + timedelta(days=1)


class InstallOnExistingSiteTest(unittest.TestCase):
    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        getGlobalSiteManager().registerAdapter(my_start, name="my_start")
        self.addCleanup(getGlobalSiteManager().unregisterAdapter, my_start, name="my_start")
        self.app = self.layer["app"]
        self.site = self.app.zplone
        build_content(self.site, seed=11, count=30)
        setSite(self.site)
        login(self.app, SITE_OWNER_NAME)
        stock = self.site.portal_catalog
        stock.addIndex("my_subjects", "KeywordIndex", ExtraKeyword())
        stock.addIndex("my_start", "DateRecurringIndex", ExtraRecurring())
        stock.addColumn("my_column")
        stock.manage_reindexIndex(["my_subjects", "my_start"])
        transaction.commit()

    def install(self):
        self.site.portal_setup.runAllImportStepsFromProfile("profile-plone.pgcatalog:default")
        transaction.commit()

    def test_every_item_stays_findable(self):
        before = snapshot(self.site)
        indexes, columns = set(self.site.portal_catalog.indexes()), list(self.site.portal_catalog.schema())
        self.assertGreater(len(before["paths"]), 30)
        self.install()
        catalog = self.site.portal_catalog
        self.assertIsInstance(catalog, PGCatalogTool)
        self.assertIs(aq_base(getUtility(ICatalogTool)), aq_base(catalog))
        self.assertEqual(set(catalog.indexes()), indexes)
        self.assertEqual(list(catalog.schema()), columns)
        after = snapshot(self.site)
        self.assertEqual(after["paths"], before["paths"])
        self.assertEqual(after["by_uid"], before["by_uid"])
        self.assertEqual(after["meta"], before["meta"])
        self.assertTrue(before["addon_keyword"])
        self.assertEqual(after["addon_keyword"], before["addon_keyword"])
        self.assertTrue(before["addon_recurring"])
        self.assertEqual(after["addon_recurring"], before["addon_recurring"])

    def test_addon_index_definitions_round_trip(self):
        self.install()
        defs = index_defs(self.site.portal_catalog)
        self.assertEqual(defs["my_subjects"].kind, "KeywordIndex")
        self.assertEqual(defs["my_subjects"].attrs, ("Subject",))
        self.assertEqual(defs["my_start"].kind, "DateRecurringIndex")
        self.assertEqual(defs["my_start"].options["recurdef"], "recurrence")
        self.assertEqual(defs["effectiveRange"].options["since_field"], "effective")
        self.assertEqual(defs["effectiveRange"].options["until_field"], "expires")
        self.assertEqual(defs["SearchableText"].options["lexicon_id"], "plone_lexicon")

    def test_installing_twice_keeps_the_catalog(self):
        self.install()
        first = self.site.portal_catalog.aq_base
        before = snapshot(self.site)
        self.install()
        self.assertIs(self.site.portal_catalog.aq_base, first)
        self.assertEqual(snapshot(self.site), before)

    def test_no_zcatalog_objects_left_after_pack(self):
        self.install()
        self.app._p_jar.db().pack()
        with psycopg.connect(storage_dsn(self.site)) as conn:
            left = conn.execute(
                "SELECT class_mod, class_name, count(*) FROM object_state "
                "WHERE class_mod LIKE 'Products.ZCatalog.%%' OR class_mod LIKE 'Products.PluginIndexes.%%' "
                "OR class_mod LIKE 'Products.ExtendedPathIndex.%%' OR class_mod LIKE 'Products.DateRecurringIndex.%%' "
                "OR class_mod LIKE 'Products.ZCTextIndex.%%' OR class_mod = 'Products.CMFPlone.CatalogTool' "
                "GROUP BY 1, 2"
            ).fetchall()
        self.assertEqual(left, [])

    def test_installing_again_upgrades(self):
        """A release that kept PLexicon objects in the tool and had no
        type-led date indexes: installing again keeps the lexicons'
        pipelines in the tool's record, text searches answer as before,
        and the missing SQL indexes are built."""
        self.install()
        typed = (
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'pgcatalog\\_modified\\_by\\_type\\_%%'"
        )
        with psycopg.connect(storage_dsn(self.site)) as conn:
            (name,) = conn.execute(typed).fetchone()
        tool = self.site.portal_catalog
        changes_for(tool).ddl.append(f"DROP INDEX {name}")  # in the storage's transaction
        for lexicon in list(tool.objectValues()):
            old = PLexicon(lexicon.getId(), lexicon.title, *lexicon._pipeline)
            tool._delObject(lexicon.getId(), suppress_events=True)
            ObjectManager._setOb(tool, old.getId(), old)  # bypasses the tool's conversion
            tool._objects += ({"id": old.getId(), "meta_type": old.meta_type},)
        transaction.commit()
        self.assertEqual(len(stored_lexicons(self.site)), 3)
        with psycopg.connect(storage_dsn(self.site)) as conn:
            self.assertEqual(conn.execute(typed).fetchall(), [])
        queries = ({"SearchableText": "alpha"}, {"SearchableText": "Ümlaut OR ri*"}, {"Title": "stone"})
        before = [relpaths(self.site, tool.unrestrictedSearchResults(sort_on="id", **q)) for q in queries]
        self.assertTrue(all(before), before)
        self.install()
        self.assertEqual(stored_lexicons(self.site), [])
        tool = self.site.portal_catalog
        self.assertEqual(set(tool.objectIds()), {"plone_lexicon", "plaintext_lexicon", "htmltext_lexicon"})
        after = [relpaths(self.site, tool.unrestrictedSearchResults(sort_on="id", **q)) for q in queries]
        self.assertEqual(after, before)
        with psycopg.connect(storage_dsn(self.site)) as conn:
            self.assertEqual(conn.execute(typed).fetchall(), [(name,)])


def stored_lexicons(site) -> list[int]:
    """zoids of the PLexicon objects the storage holds, after a pack."""
    site._p_jar.db().pack()
    with psycopg.connect(storage_dsn(site)) as conn:
        rows = conn.execute("SELECT zoid FROM object_state WHERE class_name = 'PLexicon'").fetchall()
    return [zoid for (zoid,) in rows]


class ToolsetReimportTest(unittest.TestCase):
    """Plone's base toolset.xml names ZCatalog's CatalogTool for
    portal_catalog; re-importing it must not throw our catalog away."""

    layer = PGCATALOG_FUNCTIONAL_TESTING

    def test_plone_toolset_reimport_keeps_catalog(self):
        portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        api.content.create(container=portal, type="Document", id="kept", title="Kept")
        transaction.commit()
        catalog = aq_base(portal.portal_catalog)
        count = len(portal.portal_catalog)
        setup = portal.portal_setup
        setup.runImportStepFromProfile("profile-Products.CMFPlone:plone", "toolset", run_dependencies=False)
        transaction.commit()
        self.assertIs(aq_base(portal.portal_catalog), catalog)
        self.assertEqual(len(portal.portal_catalog), count)
        self.assertEqual(
            setup.getToolsetRegistry().getRequiredToolInfo("portal_catalog")["class"],
            "plone.pgcatalog.tool.PGCatalogTool",
        )
        self.assertEqual([b.getId for b in portal.portal_catalog(portal_type="Document")], ["kept"])
        self.assertIn("plone_lexicon", portal.portal_catalog.objectIds())


    def test_toolset_import_changes_only_the_setup_tool(self):
        # Taking the catalog out of the site and back wrote the site's
        # folder in every toolset step: plone.restapi's test fixture then
        # failed to commit (MockMailHost stores an acquisition wrapper,
        # which ZODB pickles only where the tool got its oid first).
        portal = self.layer["portal"]
        transaction.commit()
        jar = portal._p_jar
        for profile in ("profile-Products.CMFPlone:plone", "profile-plone.app.discussion:default"):
            portal.portal_setup.runImportStepFromProfile(profile, "toolset", run_dependencies=False)
            self.assertEqual([type(o).__name__ for o in jar._registered_objects], ["SetupTool"], profile)
            transaction.commit()
        self.assertEqual(
            portal.portal_setup.getToolsetRegistry().getRequiredToolInfo("portal_catalog")["class"],
            "plone.pgcatalog.tool.PGCatalogTool",
        )


class UpgradeTest(unittest.TestCase):
    """An older install upgrades through the Add-ons panel; the schema
    version is recorded in the database."""

    layer = PGCATALOG_FUNCTIONAL_TESTING

    def test_older_install_upgrades_through_the_addons_panel(self):
        portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        api.content.create(container=portal, type="Document", id="before", title="Before the upgrade")
        transaction.commit()
        setup, profile = portal.portal_setup, "plone.pgcatalog:default"
        installer = get_installer(portal, self.layer["request"])
        self.assertEqual(setup.getLastVersionForProfile(profile), (str(SCHEMA_VERSION),))
        self.assertFalse(installer.upgrade_info("plone.pgcatalog")["required"])
        with psycopg.connect(storage_dsn(portal), autocommit=True) as conn:
            self.assertEqual(schema_version(conn.cursor()), SCHEMA_VERSION)
            # as a release before the record left the database and the profile
            conn.execute("DROP TABLE pgcatalog_schema")
            self.assertEqual(schema_version(conn.cursor()), 1)
        setup.setLastVersionForProfile(profile, "1")
        transaction.commit()

        info = installer.upgrade_info("plone.pgcatalog")
        self.assertTrue(info["required"] and info["available"])
        self.assertTrue(installer.upgrade_product("plone.pgcatalog"))  # the panel's button
        transaction.commit()
        self.assertEqual(setup.getLastVersionForProfile(profile), (str(SCHEMA_VERSION),))
        self.assertFalse(installer.upgrade_info("plone.pgcatalog")["required"])
        with psycopg.connect(storage_dsn(portal)) as conn:
            self.assertEqual(schema_version(conn.cursor()), SCHEMA_VERSION)
        found = portal.portal_catalog.unrestrictedSearchResults(id="before")
        self.assertEqual([b.Title for b in found], ["Before the upgrade"])

    def test_release_7_upgrades(self):
        """Release 7 had no "Relevance" sort order, search page layer or
        kept texts: the upgrade adds them, and a search then has snippets
        once its items are reindexed."""
        portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        api.content.create(container=portal, type="Document", id="kept", title="Kept river text")
        transaction.commit()
        registry, profile = portal.portal_registry, "plone.pgcatalog:default"
        prefix = "plone.app.querystring.field.relevance."
        for name in [name for name in registry.records if name.startswith(prefix)]:
            del registry.records[name]
        unregister_layer("plone.pgcatalog")
        with psycopg.connect(storage_dsn(portal)) as conn:
            conn.execute("UPDATE object_state SET indexed_text = NULL")
        portal.portal_setup.setLastVersionForProfile(profile, "7")
        transaction.commit()
        self.assertNotIn(IPGCatalogLayer, registered_layers())
        self.assertTrue(get_installer(portal, self.layer["request"]).upgrade_product("plone.pgcatalog"))
        transaction.commit()
        self.assertTrue(registry[prefix + "sortable"])
        self.assertIn(IPGCatalogLayer, registered_layers())
        self.assertEqual(portal.portal_setup.getLastVersionForProfile(profile), (str(SCHEMA_VERSION),))
        self.assertIsNone(portal.portal_catalog(SearchableText="river")[0].snippet())
        portal.portal_catalog.reindexIndex("SearchableText", None)
        transaction.commit()
        self.assertEqual(portal.portal_catalog(SearchableText="river")[0].snippet(), "kept Kept <mark>river</mark> text")

    def test_release_before_compact_word_counts_upgrades(self):
        """Rows of schema version 4 held every word's frequency: they score
        the same, ``verify`` lists them as stale, and the upgrade drops
        what the positions tell, leaving the rows this release writes."""
        portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        texts = ("river stone river", "river " * 300, "stone copper", "copper copper river willow")
        for number, text in enumerate(texts):
            api.content.create(
                container=portal, type="Document", id=f"t{number}", title=f"T{number}", description=text
            )
        transaction.commit()
        tool, setup = portal.portal_catalog, portal.portal_setup
        dsn = storage_dsn(portal)
        counts = "SELECT zoid, word_counts FROM object_state WHERE word_counts IS NOT NULL ORDER BY zoid"

        def relevance():
            return [(b.getId, b.data_record_score_) for b in tool(SearchableText="river OR st*")]

        scores = relevance()
        self.assertEqual(len(scores), 4)
        with psycopg.connect(dsn) as conn:
            written = conn.execute(counts).fetchall()
            conn.execute(EVERY_FREQUENCY)
        setup.setLastVersionForProfile("plone.pgcatalog:default", "4")
        transaction.commit()
        self.assertEqual(relevance(), scores)
        self.assertEqual(len(verify(tool).stale), len(written))
        self.assertTrue(get_installer(portal, self.layer["request"]).upgrade_product("plone.pgcatalog"))
        transaction.commit()
        with psycopg.connect(dsn) as conn:
            self.assertEqual(conn.execute(counts).fetchall(), written)
        self.assertEqual(relevance(), scores)
        self.assertTrue(verify(tool).ok)

    def test_release_before_the_typed_columns_upgrades(self):
        """A catalog of schema version 2 kept the hot keys in ``idx`` only,
        with expression indexes: searches keep reading ``idx`` until the
        upgrade, which fills the typed columns (and the rows written in
        between, by this release's processor, have them already), builds
        their indexes, drops the expression indexes and switches the
        searches over, with the same answers."""
        portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        portal.portal_workflow.setChainForPortalTypes(["Document", "Folder"], "simple_publication_workflow")
        for i in range(6):
            doc = api.content.create(container=portal, type="Document", id=f"doc-{i}", title=f"Doc {i}")
            if i % 2:
                api.content.transition(obj=doc, transition="publish")
        api.content.create(container=portal, type="Folder", id="folder", title="Folder")
        transaction.commit()
        tool = portal.portal_catalog
        setup, profile = portal.portal_setup, "plone.pgcatalog:default"
        untyped = {name: replace(index, typed=False) for name, index in index_defs(tool).items()}
        typed_columns = ", ".join(f"{t.name} = NULL" for t in TYPED)
        # what version 2 left: no typed values, the expression indexes, no covering index
        pending = changes_for(tool)
        pending.ddl.append(f"UPDATE object_state SET {typed_columns}")
        pending.ddl.append("DROP INDEX pgcatalog_hot_keys")
        for index in untyped.values():
            pending.ddl.extend(drop_index_ddl(index_defs(tool)[index.name], keep=index))
            pending.ddl.extend(index_ddl(index))
        tool._pgc_typed = False
        setup.setLastVersionForProfile(profile, "2")
        transaction.commit()
        dsn = storage_dsn(portal)
        filled = "SELECT count(*) FROM object_state WHERE idx IS NOT NULL AND portal_type IS NOT NULL"
        with psycopg.connect(dsn) as conn:
            self.assertEqual(conn.execute(filled).fetchone(), (0,))
        queries = (
            {"portal_type": "Document", "sort_on": "id"},
            {"portal_type": ["Document", "Folder"], "review_state": "published", "sort_on": "id"},
            {"review_state": "private", "sort_on": "id"},
        )

        def answers():
            return [[b.getId for b in tool.searchResults(**q)] for q in queries]

        before = answers()
        self.assertEqual(before[0], [f"doc-{i}" for i in range(6)])
        # this release writes the typed columns of what it catalogs
        api.content.create(container=portal, type="Document", id="doc-6", title="Doc 6")
        transaction.commit()
        with psycopg.connect(dsn) as conn:
            typed = conn.execute(
                "SELECT path, portal_type FROM object_state WHERE path LIKE '%%/doc-_' ORDER BY path"
            ).fetchall()
        self.assertEqual([t for _, t in typed], [None] * 6 + ["Document"])
        before = answers()

        installer = get_installer(portal, self.layer["request"])
        self.assertTrue(installer.upgrade_product("plone.pgcatalog"))
        transaction.commit()
        self.assertTrue(tool._pgc_typed)
        self.assertEqual(setup.getLastVersionForProfile(profile), (str(SCHEMA_VERSION),))
        with psycopg.connect(dsn) as conn:
            self.assertEqual(conn.execute(filled).fetchone(), (len(tool),))
            differs = " OR ".join(f"{t.name} IS DISTINCT FROM {t.value_sql('idx')}" for t in TYPED)
            stale = conn.execute(f"SELECT count(*) FROM object_state WHERE idx IS NOT NULL AND ({differs})")
            self.assertEqual(stale.fetchone(), (0,))
            names = {name for (name,) in conn.execute("SELECT indexname FROM pg_indexes").fetchall()}
        self.assertIn("pgcatalog_hot_keys", names)
        for name, index in index_defs(tool).items():
            built = {re.search(r"EXISTS (\w+)", ddl).group(1) for ddl in index_ddl(index)}
            gone = {
                re.search(r"EXISTS (\w+)", ddl).group(1) for ddl in drop_index_ddl(untyped[name], keep=index)
            }
            self.assertLessEqual({n for n in built if not n.endswith("_stats")}, names, name)
            self.assertFalse(gone & names, name)
        self.assertEqual(answers(), before)
        report = verify(tool)
        self.assertTrue(report.ok, report.summary())

    def test_schema_version_where_nothing_is_installed(self):
        with psycopg.connect(storage_dsn(self.layer["portal"])) as conn:
            conn.execute("DROP TABLE pgcatalog_schema, pgcatalog_counter")
            self.assertIsNone(schema_version(conn.cursor()))
            conn.rollback()


class OddIndex(FieldIndex):
    """An add-on's index kind that plone.pgcatalog has no SQL for."""

    meta_type = "OddIndex"


class UnservedIndexTest(unittest.TestCase):
    """Indexes of kinds without SQL (PathIndex, TopicIndex, an add-on's)
    are refused, not left out of the query: ZCatalog would narrow the
    answer by them."""

    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        self.app = self.layer["app"]
        self.site = self.app.zplone
        build_content(self.site, seed=5, count=10)
        setSite(self.site)
        login(self.app, SITE_OWNER_NAME)
        stock = self.site.portal_catalog
        stock.addIndex("my_path", "PathIndex")
        stock.addIndex("my_topic", "TopicIndex")
        stock.addIndex("my_odd", OddIndex("my_odd", extra={"indexed_attrs": "Title"}))
        stock.manage_reindexIndex(["my_path", "my_odd"])
        transaction.commit()
        self.narrowed = len(stock.unrestrictedSearchResults(my_path="/zplone/nowhere"))
        with self.assertLogs("plone.pgcatalog", "ERROR") as logs:
            self.site.portal_setup.runAllImportStepsFromProfile("profile-plone.pgcatalog:default")
        transaction.commit()
        self.log = "\n".join(logs.output)

    def test_queries_on_them_are_refused(self):
        self.assertEqual(self.narrowed, 0)  # what ZCatalog answered
        for name in ("my_path (PathIndex)", "my_topic (TopicIndex)", "my_odd (OddIndex)"):
            self.assertIn(name, self.log)
        catalog = self.site.portal_catalog
        for query in (
            {"my_path": "/zplone/nowhere"},
            {"my_topic": "anything", "portal_type": "Document"},
            {"my_odd": "Title"},
            {"portal_type": "Document", "sort_on": "my_odd"},
            {"portal_type": "Document", "sort_on": ["sortable_title", "my_path"]},
        ):
            with self.subTest(query=query), self.assertRaises(UnservedIndex) as raised:
                catalog.unrestrictedSearchResults(**query)
            self.assertIsInstance(raised.exception, CatalogError)
            self.assertIn("no SQL for its kind", str(raised.exception))
        self.assertTrue(catalog.unrestrictedSearchResults(portal_type="Document"))

    def test_deleted_they_are_ignored_as_unknown_keys(self):
        catalog = self.site.portal_catalog
        catalog.manage_delIndex(["my_path"])
        everything = len(catalog.unrestrictedSearchResults())
        self.assertEqual(len(catalog.unrestrictedSearchResults(my_path="/zplone/nowhere")), everything)
        with self.assertRaises(UnservedIndex):
            catalog.unrestrictedSearchResults(my_topic="x")

    def test_uninstall_puts_them_back(self):
        restore_zcatalog(self.site)
        stock = self.site.portal_catalog
        self.assertEqual(stock._catalog.getIndex("my_path").meta_type, "PathIndex")
        self.assertEqual(stock._catalog.getIndex("my_topic").meta_type, "TopicIndex")
        self.assertNotIn("my_odd", stock.indexes())  # its kind is not a registered product


class CatalogNotInstalledTest(unittest.TestCase):
    """A catalog read on a database without the catalog's columns says
    what to do, instead of PostgreSQL's UndefinedColumn."""

    layer = PGCATALOG_FUNCTIONAL_TESTING

    def test_reads_without_the_columns(self):
        portal = self.layer["portal"]
        catalog = portal.portal_catalog
        self.assertTrue(len(catalog))
        transaction.abort()  # a new snapshot, which has not read the catalog yet
        conn = storage_instance(portal).pg_connection
        conn.execute("SAVEPOINT columns_away; SET LOCAL lock_timeout = '10s'")
        columns = ", ".join(f"DROP COLUMN {name} CASCADE" for name in column_names())
        conn.execute(f"ALTER TABLE object_state {columns}")
        try:
            for search in (
                lambda: catalog.searchResults(portal_type="Document"),
                lambda: catalog.searchResults(SearchableText="kept"),
                lambda: len(catalog),
            ):
                with self.assertRaises(CatalogNotInstalled) as raised:
                    search()
                self.assertIsInstance(raised.exception, CatalogError)
                self.assertIn("import its profile", str(raised.exception))
        finally:
            conn.execute("ROLLBACK TO SAVEPOINT columns_away")
            transaction.abort()
        self.assertTrue(len(catalog))
