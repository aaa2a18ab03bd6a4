"""The catalog's ZMI tabs, through the publisher: records, indexes,
metadata, the query report with plans; opening them writes nothing."""

from helpers import CatalogTestCase
from plone import api
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.pgcatalog import report
from plone.pgcatalog.connection import storage_dsn
from plone.testing.zope import Browser
from unittest import mock
from urllib.parse import urlencode
from zExceptions import BadRequest
from zExceptions import Unauthorized

import psycopg
import transaction


class ZMITest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        folder = api.content.create(container=self.portal, type="Folder", id="guide", title="Guide")
        api.content.create(container=folder, type="Document", id="intro", title="Introduction")
        transaction.commit()
        self.browser = Browser(self.layer["app"])
        self.browser.handleErrors = False
        self.browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        self.url = self.catalog.absolute_url()

    def last_tid(self) -> int:
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            return conn.execute("SELECT max(tid) FROM transaction_log").fetchone()[0]

    def test_tabs(self):
        before = self.last_tid()
        self.browser.open(self.url + "/manage_catalogView")
        for tab in ("Catalog", "Indexes", "Metadata", "Advanced", "Query Report"):
            self.assertIn(f">{tab}<", self.browser.contents)
        self.assertIn(f"{len(self.catalog)} records", self.browser.contents)
        self.browser.getControl(name="path").value = "/plone/guide"
        self.browser.getControl("Filter by path").click()
        self.assertIn("2 records", self.browser.contents)
        self.browser.getLink("/plone/guide/intro").click()
        self.assertIn("Record", self.browser.contents)
        self.assertIn("<th>portal_type</th><td>Document</td>", self.browser.contents.replace("\n", ""))
        self.assertIn("Introduction", self.browser.contents)

        self.browser.open(self.url + "/manage_catalogIndexes")
        contents = self.browser.contents
        self.assertIn("pgcatalog_portal_type_", contents)
        self.assertIn("pgcatalog_searchable_text", contents)
        self.assertNotIn("not built", contents)
        for name in self.catalog.indexes():
            self.assertIn(f"<td>{name}</td>", contents)

        self.browser.open(self.url + "/manage_catalogSchema")
        for name in self.catalog.schema():
            self.assertIn(f"<li>{name}</li>", self.browser.contents)
        self.assertEqual(self.last_tid(), before)  # read-only requests wrote nothing

    def test_the_catalog_cannot_be_copied_or_moved(self):
        # The ZMI's Copy, Cut and Rename buttons on the site: refused, saying
        # why (ZCatalog's tool is copied; ours would share the site's rows)
        site = self.portal.absolute_url()
        forms = (
            ("manage_copyObjects", {"ids:list": "portal_catalog"}),
            ("manage_cutObjects", {"ids:list": "portal_catalog"}),
            ("manage_renameObjects", {"ids:list": "portal_catalog", "new_ids:list": "catalog2"}),
        )
        before = self.last_tid()
        for action, form in forms:
            with self.assertRaises(BadRequest, msg=action) as raised:
                self.browser.open(f"{site}/{action}", data=urlencode(form))
            self.assertIn("portal_catalog cannot be copied, moved or renamed", str(raised.exception))
        with self.assertRaises(BadRequest):
            self.portal.manage_copyObjects(["portal_catalog"])
        transaction.abort()
        self.assertEqual(self.last_tid(), before)
        self.assertEqual(self.portal.objectIds().count("portal_catalog"), 1)
        self.assertEqual(len(self.catalog(portal_type="Document")), 1)

    def test_query_report_with_plans(self):
        report.clear()
        self.catalog.unrestrictedSearchResults(portal_type="Document", sort_on="sortable_title")
        self.catalog.unrestrictedSearchResults(portal_type="Folder", sort_on="sortable_title")
        self.catalog.unrestrictedSearchResults(path={"query": "/plone/guide", "depth": 1})
        shapes = {e.key: e for e in report.entries()}
        self.assertEqual(shapes["portal_type, sort_on"].count, 2)
        self.assertIn("path(depth)", shapes)
        before = self.last_tid()
        self.browser.open(self.url + "/manage_catalogReport")
        self.assertIn("portal_type, sort_on", self.browser.contents)
        self.browser.getLink("plan", index=0).click()
        self.assertIn("Plan of", self.browser.contents)
        self.assertRegex(self.browser.contents, r"(Index|Seq|Bitmap).*Scan")
        self.assertEqual(self.last_tid(), before)

    def test_report_keeps_the_slowest_shapes(self):
        report.clear()
        clock = iter(range(10**6))  # each search takes as long as its number
        with mock.patch.object(report.time, "perf_counter", lambda: 0):
            report.searching({"portal_type": "x"}, lambda query: None)
        for i in range(report.KEEP + 10):
            start = next(clock)
            ticks = iter([start, start + i + 1])
            with mock.patch.object(report.time, "perf_counter", lambda ticks=ticks: next(ticks)):
                report.searching(
                    {f"index_{i}": 1}, lambda query, i=i: report.note_statement("SELECT 1", [], 0.001 * i)
                )
        kept = report.entries()
        self.assertEqual(len(kept), report.KEEP)
        self.assertEqual(kept[0].key, f"index_{report.KEEP + 9}")  # slowest first
        self.assertNotIn("portal_type", [e.key for e in kept])  # the fastest went

    def test_tabs_need_the_manage_permission(self):
        logout()
        for name in (
            "manage_catalogView",
            "manage_catalogIndexes",
            "manage_catalogSchema",
            "manage_catalogReport",
        ):
            with self.assertRaises(Unauthorized):
                self.portal.restrictedTraverse(f"portal_catalog/{name}")


class TextIndexSizeTest(CatalogTestCase):
    def test_distinct_words(self):
        api.content.create(container=self.portal, type="Document", id="w1", title="alpha beta")
        api.content.create(container=self.portal, type="Document", id="w2", title="beta gamma")
        transaction.commit()
        before = self.catalog.Indexes["Title"].indexSize()
        api.content.create(container=self.portal, type="Document", id="w3", title="gamma delta epsilon")
        transaction.commit()
        self.assertEqual(self.catalog.Indexes["Title"].indexSize(), before + 2)  # delta, epsilon
