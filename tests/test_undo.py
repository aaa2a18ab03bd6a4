"""Undo on a history-preserving storage.

ZCatalog's BTrees are persistent objects changed in the same transaction as
the content, so undoing the transaction undoes the catalog too.  Here the
catalog data lives in the content's own rows, which the storage restores
without them: after an undo the catalog must still answer as ZCatalog does.
Each test makes the same change on both sites, one transaction each, and
undoes both transactions together.
"""

from plone import api
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import processor
from plone.pgcatalog.testing import HISTORY_DIFFERENTIAL_TESTING
from zope.component.hooks import setSite

from unittest import mock

import transaction
import unittest


class UndoTest(unittest.TestCase):
    maxDiff = None
    layer = HISTORY_DIFFERENTIAL_TESTING

    def setUp(self):
        self.app = self.layer["app"]
        self.sites = (self.app["plone"], self.app["zplone"])
        login(self.app, SITE_OWNER_NAME)
        for site in self.sites:
            setSite(site)
            site.portal_workflow.setChainForPortalTypes(("Document", "Folder"), "simple_publication_workflow")
            folder = api.content.create(container=site, type="Folder", id="f", title="Folder")
            api.content.create(container=folder, type="Document", id="d", title="Alpha")
            api.content.create(container=site, type="Document", id="e", title="Echo")
            sub = api.content.create(container=folder, type="Folder", id="sub", title="Sub")
            api.content.create(container=sub, type="Document", id="deep", title="Deep")
            api.user.create(email="jane@example.org", username="jane", password="secret-secret")
            # one site per transaction: CMFCore finds the catalog of the current site
            transaction.commit()

    def state(self, site) -> list:
        """What the catalog says: every record with some metadata, and a
        few searches, by paths relative to the site."""
        setSite(site)
        catalog = site.portal_catalog
        root = "/".join(site.getPhysicalPath())

        def paths(**query):
            return [
                b.getPath()[len(root) :] for b in catalog.unrestrictedSearchResults(sort_on="path", **query)
            ]

        records = [
            (b.getPath()[len(root) :], b.Title, b.review_state, b.getId)
            for b in catalog.unrestrictedSearchResults(path=root, sort_on="path")
            if b.getPath() != root  # the sites' own ids differ
        ]
        return [
            records,
            paths(Title="alpha"),
            paths(Title="bravo"),
            paths(SearchableText="deep"),
            paths(review_state="published"),
            paths(allowedRolesAndUsers="Anonymous"),
            paths(allowedRolesAndUsers="user:jane"),
            paths(path={"query": root + "/f", "depth": 1}),
            paths(getId="e"),
            len(catalog.unrestrictedSearchResults(portal_type="Document")),
        ]

    def change_and_undo(self, change) -> None:
        pg, z = self.sites
        before = self.state(z)
        self.assertEqual(self.state(pg), before)
        tids = []
        for site in self.sites:
            setSite(site)
            change(site)
            transaction.commit()
            tids.append(self.app._p_jar.db().undoLog(0, 1)[0]["id"])
        changed = self.state(z)
        self.assertNotEqual(changed, before)
        self.assertEqual(self.state(pg), changed)
        db = self.app._p_jar.db()
        db.undoMultiple(list(reversed(tids)))
        transaction.commit()
        self.app._p_jar.sync()
        self.assertEqual(self.state(z), before, "ZCatalog's undo")
        self.assertEqual(self.state(pg), before)

    def test_edit(self):
        def edit(site):
            doc = site["f"]["d"]
            doc.title = "Bravo"
            doc.reindexObject()

        self.change_and_undo(edit)

    def test_workflow_transition(self):
        self.change_and_undo(lambda site: api.content.transition(obj=site["f"], transition="publish"))

    def test_delete(self):
        self.change_and_undo(lambda site: api.content.delete(obj=site["f"]["sub"]))

    def test_create(self):
        def create(site):
            new = api.content.create(container=site["f"], type="Folder", id="new", title="New")
            api.content.create(container=new, type="Document", id="newer", title="Deep newer")

        self.change_and_undo(create)

    def test_move(self):
        self.change_and_undo(lambda site: api.content.move(source=site["f"]["sub"], target=site))

    def test_rename(self):
        self.change_and_undo(lambda site: api.content.rename(obj=site["e"], new_id="e2"))

    def test_sharing(self):
        # the folder's local roles reach its subtree's allowedRolesAndUsers
        def share(site):
            api.user.grant_roles(username="jane", obj=site["f"], roles=["Reader"])
            site["f"].reindexObjectSecurity()

        self.change_and_undo(share)

    def test_the_undo_itself_counts_as_a_catalog_change(self):
        # the undo changes catalog rows in its own commit (a created
        # document's row goes): getCounter, and the counts remembered at
        # it (plone.pgcatalog.counts), move then, not only when the
        # repair commits after it
        pg = self.sites[0]
        setSite(pg)
        catalog = pg.portal_catalog
        api.content.create(container=pg, type="Document", id="new", title="New")
        transaction.commit()
        tid = self.app._p_jar.db().undoLog(0, 1)[0]["id"]
        self.assertEqual(len(catalog.unrestrictedSearchResults(portal_type="Document")), 4)
        counter = catalog.getCounter()
        with mock.patch.object(processor, "schedule"):  # no repair
            self.app._p_jar.db().undoMultiple([tid])
            transaction.commit()
        self.app._p_jar.sync()
        self.assertEqual(catalog.getCounter(), counter + 1)
        self.assertEqual(len(catalog.unrestrictedSearchResults(portal_type="Document")), 3)
