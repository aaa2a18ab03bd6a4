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
from AccessControl.SecurityManagement import newSecurityManager
from AccessControl.SecurityManagement import noSecurityManager
from AccessControl.SpecialUsers import nobody
from plone.pgcatalog import processor
from plone.pgcatalog import undo
from plone.pgcatalog.verify import repair
from plone.pgcatalog.verify import verify
from Testing.makerequest import makerequest
from plone.pgcatalog.testing import HISTORY_DIFFERENTIAL_TESTING
from zope.component.hooks import setSite

from unittest import mock

import threading
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


class UndoWindowTest(unittest.TestCase):
    """Between an undo's commit and its repair, another request (a worker
    with a connection of its own) finds nothing its user may not see
    once the undo is done: the rows the undo may have made stale are
    hidden in the undo's own transaction.  A repair that fails leaves them
    hidden."""

    layer = HISTORY_DIFFERENTIAL_TESTING

    def setUp(self):
        self.app = self.layer["app"]
        self.site = self.app["plone"]
        login(self.app, SITE_OWNER_NAME)
        setSite(self.site)
        site = self.site
        site.portal_workflow.setChainForPortalTypes(("Document", "Folder"), "simple_publication_workflow")
        api.user.create(email="jane@example.org", username="jane", password="secret-secret")
        folder = api.content.create(container=site, type="Folder", id="f", title="Folder")
        api.content.create(container=folder, type="Document", id="d", title="Alpha")
        sub = api.content.create(container=folder, type="Folder", id="sub", title="Sub")
        api.content.create(container=sub, type="Document", id="deep", title="Deep")
        public = api.content.create(container=site, type="Folder", id="public", title="Public")
        api.content.transition(obj=public, transition="publish")
        public.manage_setLocalRoles("jane", ["Reader"])
        public.reindexObjectSecurity()
        transaction.commit()
        self.root = "/".join(site.getPhysicalPath())

    def seen(self) -> dict:
        """What Anonymous, jane and admin find now, from a worker of its own."""
        found: dict = {}

        def work():
            conn = self.app._p_jar.db().open()
            try:
                app = makerequest(conn.root()["Application"])
                site = app.unrestrictedTraverse(self.root)
                setSite(site)
                users = {
                    "Anonymous": nobody,
                    "jane": site.acl_users.getUserById("jane"),
                    "admin": app.acl_users.getUserById(SITE_OWNER_NAME),
                }
                for name, user in users.items():
                    folder = app.acl_users if name == "admin" else site.acl_users
                    newSecurityManager(None, user.__of__(folder) if name != "Anonymous" else user)
                    found[name] = sorted(
                        b.getPath()[len(self.root) :] for b in site.portal_catalog(path=self.root)
                    )
            finally:
                noSecurityManager()
                setSite(None)
                transaction.abort()
                conn.close()

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        return found

    def undo_last(self, repaired: bool = True) -> dict:
        """Undo the last transaction; what the worker found between its
        commit and the repair."""
        window = {}
        real = undo.repair

        def repair(db, repairs):
            window.update(self.seen())
            if repaired:
                real(db, repairs)

        tid = self.app._p_jar.db().undoLog(0, 1)[0]["id"]
        with mock.patch.object(undo, "repair", repair):
            self.app._p_jar.db().undoMultiple([tid])
            transaction.commit()
        self.app._p_jar.sync()
        return window

    def assertNothingMore(self, window: dict, after: dict) -> None:
        for user in ("Anonymous", "jane"):
            self.assertEqual(sorted(set(window[user]) - set(after[user])), [], f"{user} in the window")

    def changed_and_undone(self, change, repaired: bool = True):
        before = self.seen()
        setSite(self.site)
        change(self.site)
        transaction.commit()
        self.assertNotEqual(self.seen(), before)
        window = self.undo_last(repaired)
        after = self.seen()
        if repaired:
            self.assertEqual(after, before)
        self.assertNothingMore(window, before)
        return before, after

    def test_undone_publish(self):
        self.changed_and_undone(lambda site: api.content.transition(obj=site["f"], transition="publish"))

    def test_undone_publish_of_a_page(self):
        self.changed_and_undone(lambda site: api.content.transition(obj=site["f"]["d"], transition="publish"))

    def test_undone_share(self):
        def share(site):
            site["f"].manage_setLocalRoles("jane", ["Reader"])
            site["f"].reindexObjectSecurity()

        self.changed_and_undone(share)

    def test_undone_move_into_a_shared_folder(self):
        self.changed_and_undone(lambda site: api.content.move(source=site["f"]["sub"], target=site["public"]))

    def test_undone_rename(self):
        def rename(site):
            site["public"].manage_pasteObjects(site["f"].manage_cutObjects(["sub"]))
            api.content.rename(obj=site["public"]["sub"], new_id="renamed")

        self.changed_and_undone(rename)

    def test_undone_delete(self):
        self.changed_and_undone(lambda site: api.content.delete(obj=site["f"]["sub"]))

    def test_a_failed_repair_leaves_the_rows_hidden(self):
        before, after = self.changed_and_undone(
            lambda site: api.content.transition(obj=site["f"], transition="publish"), repaired=False
        )
        self.assertNotIn("/f", after["Anonymous"])
        self.assertIn("/f", after["admin"])  # who may see everything still finds it
        # verify() tells the hidden rows, repair() catalogs them again
        setSite(self.site)
        catalog = self.site.portal_catalog
        self.assertIn(self.root + "/f", verify(catalog).stale)
        repair(catalog)
        transaction.commit()
        self.assertEqual(verify(catalog).stale, [])
        self.assertEqual(self.seen(), before)
