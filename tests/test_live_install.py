"""Installing on a live site of 5,000 items: committed batches, progress in
the log, and a killed install that goes on where it stopped."""

from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import rebuild
from plone.pgcatalog.tool import PGCatalogTool
from plone.pgcatalog.verify import verify
from unittest import mock
from zope.component.hooks import setSite
from plone.pgcatalog.testing import DIFFERENTIAL_TESTING

import transaction
import unittest


ITEMS = 5000


class Killed(BaseException):
    """The process dies (not an Exception: nothing catches it on the way)."""


class LiveInstallTest(unittest.TestCase):
    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        app = self.layer["app"]
        self.site = app.zplone
        setSite(self.site)
        login(app, SITE_OWNER_NAME)
        self.site.invokeFactory("Folder", "many", title="Many")
        folder = self.site.many
        for i in range(ITEMS):
            folder.invokeFactory("Document", f"d{i:05d}", title=f"Document {i:05d}")
            if i % 250 == 249:  # zodb-pgjsonb ends a snapshot idle for 60 s (a busy machine)
                transaction.commit()
        transaction.commit()
        self.expected = len(self.site.portal_catalog)
        self.assertGreater(self.expected, ITEMS)

    def install(self):
        self.site.portal_setup.runAllImportStepsFromProfile("profile-plone.pgcatalog:default")
        transaction.commit()

    def test_killed_install_resumes(self):
        calls = []
        original = PGCatalogTool.catalog_object

        def dies_after_2500(tool, obj, uid=None, *args, **kw):
            if len(calls) == 2500:
                raise Killed
            calls.append(uid)
            return original(tool, obj, uid, *args, **kw)

        with mock.patch.object(PGCatalogTool, "catalog_object", dies_after_2500):
            with self.assertRaises(Killed), self.assertLogs("plone.pgcatalog", "INFO") as logs:
                with mock.patch.object(
                    rebuild.Progress, "__init__", _every_second(rebuild.Progress.__init__)
                ):
                    self.install()
        transaction.abort()
        catalog = self.site.portal_catalog
        self.assertIsInstance(catalog, PGCatalogTool)  # the swap was committed first
        self.assertFalse(catalog._pgc_complete)
        self.assertEqual(len(catalog), 2000)  # two batches of 1,000 committed, the third lost
        self.assertTrue(any(f"of ~{self.expected}" in line and "items/s" in line for line in logs.output))

        calls.clear()
        with mock.patch.object(PGCatalogTool, "catalog_object", _counting(calls, original)):
            self.install()  # importing the profile again resumes
        self.assertEqual(len(calls), self.expected - 2000)  # only what was left
        catalog = self.site.portal_catalog
        self.assertTrue(catalog._pgc_complete)
        self.assertEqual(len(catalog), self.expected)
        report = verify(catalog)
        self.assertTrue(report.ok, report.summary())
        found = catalog.unrestrictedSearchResults(path="/zplone/many", portal_type="Document")
        self.assertEqual(len(found), ITEMS)


def _counting(calls, original):
    def catalog_object(tool, obj, uid=None, *args, **kw):
        calls.append(uid)
        return original(tool, obj, uid, *args, **kw)

    return catalog_object


def _every_second(init):
    def __init__(self, label, total=None, every=10.0):
        init(self, label, total, every=0.0)

    return __init__
