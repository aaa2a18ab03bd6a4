"""Verify and repair: the catalog broken on purpose, each way, found and fixed."""

from helpers import CatalogTestCase
from plone import api
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.pgcatalog import row
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.verify import repair
from plone.pgcatalog.verify import verify
from plone.testing.zope import Browser
from unittest import mock
from zExceptions import Unauthorized

import psycopg
import transaction


class VerifyTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        folder = api.content.create(container=self.portal, type="Folder", id="f", title="Folder")
        for name in ("a", "b", "c", "d", "e"):
            api.content.create(container=folder, type="Document", id=name, title=f"Page {name}")
        transaction.commit()

    def sql(self, statement: str, *params) -> None:
        """Change the committed catalog behind the catalog's back (the
        next transaction sees it)."""
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            conn.execute(statement, params)
        transaction.abort()

    def found(self, **query) -> list[str]:
        return sorted(b.getPath() for b in self.catalog.unrestrictedSearchResults(**query))

    def test_a_catalog_built_by_plone_matches(self):
        report = verify(self.catalog)
        self.assertTrue(report.ok, report.summary())
        self.assertEqual(report.objects, report.rows)
        self.assertGreaterEqual(report.rows, 7)  # the site, the folder, the pages
        self.assertIn("the catalog matches the content", report.summary())

    def test_each_kind_of_damage_is_found_and_repaired(self):
        uid_a = self.portal.f.a.UID()
        self.sql(f"UPDATE object_state SET {row.clear_all_sql()} WHERE path = '/plone/f/a'")
        self.sql(
            "UPDATE object_state SET path = '/plone/f/elsewhere', parent_path = '/plone/f' WHERE path = '/plone/f/b'"
        )
        self.sql(
            "UPDATE object_state SET idx = jsonb_set(idx, '{id}', '\"wrong\"') WHERE path = '/plone/f/c'"
        )
        self.sql("UPDATE object_state SET meta = '{\"Title\": \"Wrong\"}' WHERE path = '/plone/f/d'")
        self.portal.f._delObject("e", suppress_events=True)  # gone, its row left behind
        transaction.commit()

        report = verify(self.catalog)
        self.assertFalse(report.ok)
        self.assertEqual(report.missing, ["/plone/f/a"])
        self.assertEqual(report.misplaced, ["/plone/f/b"])
        self.assertEqual(report.stale, ["/plone/f/c", "/plone/f/d"])
        self.assertEqual(report.orphaned, ["/plone/f/e"])
        summary = report.summary(examples=1)
        self.assertIn("stale: 2 (and 1 more)\n  /plone/f/c", summary)
        self.assertEqual(report.counts()["orphaned"], 1)
        # what the damage does to searches
        self.assertEqual(self.found(UID=uid_a), [])
        self.assertEqual(self.found(id="wrong"), ["/plone/f/c"])
        self.assertEqual(self.found(id="e"), ["/plone/f/e"])

        with mock.patch.object(transaction, "commit", wraps=transaction.commit) as commits:
            repair(self.catalog, report, batch=2)
        self.assertEqual(commits.call_count, 3)  # 5 repairs, 2 at a time
        after = verify(self.catalog)
        self.assertTrue(after.ok, after.summary())
        self.assertEqual(self.found(UID=uid_a), ["/plone/f/a"])
        self.assertEqual(self.found(id="b"), ["/plone/f/b"])
        self.assertEqual(self.found(id="wrong"), [])
        self.assertEqual([b.Title for b in self.catalog.unrestrictedSearchResults(id="d")], ["Page d"])
        self.assertEqual(self.found(id="e"), [])

    def test_an_orphan_where_another_object_lives_now(self):
        """A row left at a path that a new object took: the new object's
        row stays, the old one goes."""
        old = self.portal.f.e
        self.portal.f._delObject("e", suppress_events=True)
        transaction.commit()
        api.content.create(container=self.portal.f, type="Document", id="e", title="New e")
        transaction.commit()
        self.assertNotEqual(self.portal.f.e._p_oid, old._p_oid)
        report = verify(self.catalog)
        self.assertEqual(report.orphaned, ["/plone/f/e"])
        repair(self.catalog, report)
        self.assertTrue(verify(self.catalog).ok)
        self.assertEqual([b.Title for b in self.catalog.unrestrictedSearchResults(id="e")], ["New e"])

    def test_keywords_compare_as_sets(self):
        # an indexer may list the same keywords in another order, and a
        # Python set lists them in another order in each process
        reverse = (
            "(SELECT jsonb_agg(e ORDER BY n DESC) FROM jsonb_array_elements(idx->'allowedRolesAndUsers') "
            "WITH ORDINALITY AS k(e, n))"
        )
        self.sql(
            f"UPDATE object_state SET idx = jsonb_set(idx, '{{allowedRolesAndUsers}}', {reverse}) WHERE path = '/plone/f/c'"
        )
        self.sql(
            "UPDATE object_state SET object_provides = (SELECT jsonb_agg(e ORDER BY n DESC) "
            "FROM jsonb_array_elements(object_provides) WITH ORDINALITY AS k(e, n)) WHERE path = '/plone/f/c'"
        )
        self.assertTrue(verify(self.catalog).ok)
        self.sql(
            "UPDATE object_state SET idx = jsonb_set(idx, '{allowedRolesAndUsers}', (idx->'allowedRolesAndUsers') - 0) "
            "WHERE path = '/plone/f/c'"
        )
        self.assertEqual(verify(self.catalog).stale, ["/plone/f/c"])

    def test_values_can_be_left_unchecked(self):
        self.sql(
            "UPDATE object_state SET idx = jsonb_set(idx, '{id}', '\"wrong\"') WHERE path = '/plone/f/c'"
        )
        self.assertTrue(verify(self.catalog, values=False).ok)
        self.assertEqual(verify(self.catalog).stale, ["/plone/f/c"])


class AdvancedTabTest(CatalogTestCase):
    """The ZMI's Advanced tab: verify, repair, update, clear and rebuild."""

    def setUp(self):
        super().setUp()
        api.content.create(container=self.portal, type="Document", id="page", title="Page")
        transaction.commit()
        self.browser = Browser(self.layer["app"])
        self.browser.handleErrors = False
        self.browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        self.url = self.catalog.absolute_url()

    def test_verify_and_repair_buttons(self):
        self.browser.open(self.url + "/manage_catalogAdvanced")
        self.assertIn("Advanced", self.browser.contents)  # a tab of its own
        self.browser.getControl("Verify").click()
        self.assertIn("the catalog matches the content", self.browser.contents)

        with psycopg.connect(storage_dsn(self.portal)) as conn:
            conn.execute(f"UPDATE object_state SET {row.clear_all_sql()} WHERE path = '/plone/page'")
        transaction.abort()
        self.browser.open(self.url + "/manage_catalogAdvanced")
        self.browser.getControl("Verify").click()
        self.assertIn("missing: 1\n  /plone/page", self.browser.contents)
        self.browser.getControl("Repair").click()
        self.assertIn("Catalog repaired: 1 missing, 0 orphaned, 0 misplaced, 0 stale", self.browser.contents)
        transaction.abort()
        self.assertEqual(len(self.catalog.unrestrictedSearchResults(id="page")), 1)
        self.browser.getControl("Verify").click()
        self.assertIn("the catalog matches the content", self.browser.contents)

    def test_update_catalog_button(self):
        self.browser.open(self.url + "/manage_catalogAdvanced")
        self.browser.getControl("Update Catalog").click()
        self.assertIn("Catalog updated", self.browser.contents)
        transaction.abort()
        self.assertEqual(len(self.catalog.unrestrictedSearchResults(id="page")), 1)

    def test_the_tab_needs_the_manage_permission(self):
        self.portal.restrictedTraverse("portal_catalog/manage_catalogVerify")
        logout()
        for name in ("manage_catalogAdvanced", "manage_catalogVerify", "manage_catalogRepair"):
            with self.assertRaises(Unauthorized):
                self.portal.restrictedTraverse(f"portal_catalog/{name}")
