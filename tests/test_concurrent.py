"""Concurrent editors: Zope worker threads, each with its own ZODB
connection and transaction, committing at once.

A catalog-only write (a security reindex below a folder, an uncatalog)
and another transaction's write of the same object from an older
snapshot must not lose either change: ZCatalog gets there by writing only
the index entries that changed; this catalog raises ConflictError for the
later commit, which the publisher retries.  Each race runs on both sites;
the final entries must agree, and must be what cataloging afresh gives.
"""

from __future__ import annotations

from collections.abc import Callable
from helpers import BothSitesTestCase
from helpers import CatalogTestCase
from plone import api
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog.verify import verify
from Products.CMFCore.indexing import processQueue
from Testing.makerequest import makerequest
from typing import Any
from ZODB.POSException import ConflictError
from zope.component.hooks import setSite
from zope.globalrequest import setRequest

import random
import threading
import transaction


RETRIES = 3  # Zope's publisher retries a ConflictError three times


def in_worker(db, site_id: str, work: Callable[[Any], Any]) -> threading.Thread:
    """Start *work(site)* in a thread of its own, as a Zope worker runs a
    request: its own ZODB connection, request, site and login.  The
    thread's ``result`` is what *work* returned, or its ``error``."""

    def run():
        conn = db.open()
        try:
            app = makerequest(conn.root()["Application"])
            setRequest(app.REQUEST)
            site = app[site_id]
            setSite(site)
            login(app, SITE_OWNER_NAME)
            thread.result = work(site)
        except BaseException as error:  # handed to the test
            thread.error = error
        finally:
            transaction.abort()
            setSite(None)
            setRequest(None)
            conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.result = thread.error = None
    thread.start()
    return thread


def joined(*threads: threading.Thread, timeout: float = 600) -> list[Any]:
    """The results of *threads*, once all have ended (a worker's error is
    raised only then: a test must not end while a worker writes)."""
    for thread in threads:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in threads), "a worker hung"
    for thread in threads:
        if thread.error is not None:
            raise thread.error
    return [thread.result for thread in threads]


def retried(
    attempt: Callable[[int], Any], give_up: bool = False, errors: list[str] | None = None
) -> tuple[Any, int]:
    """Run ``attempt(n)`` and commit, retrying ConflictError as the
    publisher does; returns its result and the conflicts met (their
    messages go to *errors*).  After the last retry the ConflictError is
    raised, or with *give_up* the result is None (the publisher's error
    page)."""
    for n in range(RETRIES + 1):
        try:
            result = attempt(n)
            transaction.commit()
            return result, n
        except ConflictError as error:
            if errors is not None:
                errors.append(str(error))
            transaction.abort()
            if n == RETRIES:
                if give_up:
                    return None, n + 1
                raise
            transaction.begin()


def entries(site, path: str) -> dict | None:
    """Every index entry and metadata value of the record at *path*."""
    catalog = site.portal_catalog
    rid = catalog.getrid(path)
    if rid is None:
        return None
    return {**catalog.getIndexDataForRID(rid), **catalog.getMetadataForRID(rid)}


VARYING = {"UID", "created", "modified", "effective", "Date", "effectiveRange", "CreationDate"}
VARYING |= {"ModificationDate", "EffectiveDate", "ExpirationDate", "expires", "cmf_uid", "sync_uid"}
VARYING |= {"path", "object_provides"}  # the site's id; plone.pgcatalog's site marker


class RacesTest(BothSitesTestCase):
    maxDiff = None

    """Two transactions, the second from a snapshot older than the first's
    commit, on the same object; on both sites."""

    def setUp(self):
        super().setUp()
        for site in self.sites:
            setSite(site)
            site.portal_workflow.setChainForPortalTypes(("Document", "Folder"), "simple_publication_workflow")
            folder = api.content.create(container=site, type="Folder", id="team", title="Team")
            api.content.create(container=folder, type="Document", id="doc", title="Plan")
            api.user.create(email="ann@example.org", username="ann", password="secret-ann-1")
            processQueue()
        transaction.commit()
        self.db = self.layer["zodbDB"]

    def race(self, site, first: Callable[[Any], None], second: Callable[[Any], None]) -> tuple[int, int]:
        """*second* starts, changes and catalogs; *first* then runs and
        commits; then *second* commits (and retries).  Returns the
        conflicts each met; the second's messages are kept in
        ``self.conflicts``."""
        self.conflicts: list[str] = []
        started, first_done = threading.Event(), threading.Event()

        def run_second(site):
            def attempt(n):
                second(site)
                processQueue()  # catalog now, from this snapshot
                if n == 0:
                    started.set()
                    assert first_done.wait(60)

            return retried(attempt, errors=self.conflicts)[1]

        def run_first(site):
            assert started.wait(60)
            try:
                return retried(lambda n: first(site))[1]
            finally:
                first_done.set()

        site_id = site.getId()
        later = in_worker(self.db, site_id, run_second)
        earlier = in_worker(self.db, site_id, run_first)
        first_conflicts, second_conflicts = joined(earlier, later)
        transaction.begin()  # see both commits
        return first_conflicts, second_conflicts

    def compare(self, path: str) -> list[dict | None]:
        found = []
        for site in self.sites:
            setSite(site)
            record = entries(site, "/".join(site.getPhysicalPath()) + path)
            # keywords in any order
            found.append(
                record
                and {
                    k: sorted(v) if isinstance(v, list) else v for k, v in record.items() if k not in VARYING
                }
            )
        if None not in found:
            keys = set(found[0]) | set(found[1])
            differing = {
                k: (found[0].get(k), found[1].get(k)) for k in keys if found[0].get(k) != found[1].get(k)
            }
            self.assertEqual(differing, {})
        self.assertEqual(found[0], found[1])
        setSite(self.sites[0])
        report = verify(self.sites[0].portal_catalog)
        self.assertTrue(report.ok, report.summary())
        return found

    def test_edit_racing_a_security_reindex_below_a_folder(self):
        """A local role given on the folder reindexes the document's
        security only (the document itself is not stored); an edit of the
        document from before that commit must not write the old security
        back."""

        def share(site):
            site.team.manage_setLocalRoles("ann", ["Reader"])
            site.team.reindexObjectSecurity()

        def edit(site):
            site.team.doc.setTitle("Plan, edited")
            site.team.doc.reindexObject()

        conflicts = []
        for site in self.sites:
            conflicts.append(self.race(site, share, edit))
            if site is self.sites[0]:  # the message names the row that changed
                self.assertEqual(len(self.conflicts), 1)
                self.assertTrue(self.conflicts[0].endswith("since this one began: /plone/team/doc"), self.conflicts)
        # here the edit is retried; ZCatalog wrote disjoint index entries
        self.assertEqual(conflicts, [(0, 1), (0, 0)])
        pg, z = self.compare("/team/doc")
        self.assertIn("user:ann", pg["allowedRolesAndUsers"])
        self.assertEqual(pg["Title"], "Plan, edited")
        setSite(self.sites[0])
        login(self.sites[0], "ann")
        self.assertEqual([b.getPath() for b in self.sites[0].portal_catalog(id="doc")], ["/plone/team/doc"])

    def test_edit_racing_a_delete(self):
        """The document deleted while another transaction edits it: the
        edit must not bring its row back (a phantom)."""

        def delete(site):
            site.team.manage_delObjects(["doc"])

        def edit(site):
            doc = site.team.get("doc")
            if doc is None:  # gone when retried: a 404
                return
            doc.setTitle("Plan, edited")
            doc.reindexObject()

        conflicts = [self.race(site, delete, edit) for site in self.sites]
        self.assertEqual(conflicts[0], (0, 1))
        self.assertEqual(self.compare("/team/doc"), [None, None])

    def test_workflow_change_racing_an_edit(self):
        """Both store the document: ZODB itself sees the conflict; neither
        change is lost."""

        def publish(site):
            api.content.transition(obj=site.team.doc, transition="publish")

        def edit(site):
            site.team.doc.setTitle("Plan, edited")
            site.team.doc.reindexObject()

        conflicts = [self.race(site, publish, edit) for site in self.sites]
        self.assertEqual(conflicts, [(0, 1), (0, 1)])
        pg, z = self.compare("/team/doc")
        self.assertEqual(pg["review_state"], "published")
        self.assertEqual(pg["Title"], "Plan, edited")


class EditorsTest(CatalogTestCase):
    """Four workers create, edit, move, reorder, publish, share and
    delete content at once; afterwards the catalog equals the content."""

    WORKERS = 4
    TRANSACTIONS = 25

    def setUp(self):
        super().setUp()
        self.portal.portal_workflow.setChainForPortalTypes(
            ("Document", "Folder"), "simple_publication_workflow"
        )
        for f in range(3):
            folder = api.content.create(container=self.portal, type="Folder", id=f"f{f}", title=f"Folder {f}")
            for d in range(4):
                api.content.create(container=folder, type="Document", id=f"d{d}", title=f"Doc {f}-{d}")
        api.user.create(email="ann@example.org", username="ann", password="secret-ann-1")
        transaction.commit()

    def test_concurrent_editors_lose_nothing(self):
        def work(site, seed):
            rng = random.Random(seed)
            conflicts = failed = 0
            for t in range(self.TRANSACTIONS):
                done, met = retried(lambda n, t=t: operate(site, rng, f"w{seed}t{t}n{n}"), give_up=True)
                conflicts += met
                failed += done is None
            return conflicts, failed

        threads = [
            in_worker(self.layer["zodbDB"], "plone", lambda site, s=s: work(site, s))
            for s in range(self.WORKERS)
        ]
        counts = joined(*threads)
        conflicts, failed = sum(c for c, f in counts), sum(f for c, f in counts)
        transaction.begin()
        report = verify(self.catalog)
        self.assertTrue(report.ok, report.summary())
        # the rows are the content: nothing lost, nothing phantom (creates
        # and deletes are as likely: how many stay depends on who conflicts)
        paths = {b.getPath() for b in self.catalog(path="/plone", sort_on="path")}
        walked = {"/plone"} | {"/".join(o.getPhysicalPath()) for o in walk(self.portal)}
        self.assertEqual(paths, walked)
        self.assertEqual(report.rows, len(walked))
        self.assertGreater(len(walked), 4)  # documents beside the site and its three folders
        self.assertLess(failed, self.WORKERS * self.TRANSACTIONS / 2)
        print(
            f"\n{self.WORKERS * self.TRANSACTIONS} transactions, {conflicts} conflicts, {failed} given up",
            end=" ",
        )


def walk(container):
    for obj in container.objectValues():
        if obj.portal_type in ("Folder", "Document"):
            yield obj
            yield from walk(obj)


def operate(site, rng: random.Random, name: str) -> str:
    """One editor's transaction: a random change somewhere in the site;
    returns what it did."""
    folders = [site[f] for f in ("f0", "f1", "f2")]
    folder = rng.choice(folders)
    docs = [o for o in folder.objectValues() if o.portal_type == "Document"]
    action = rng.choice(("create", "edit", "edit", "publish", "move", "reorder", "share", "delete"))
    if action == "create" or not docs:
        api.content.create(container=folder, type="Document", id=name, title=f"Doc {name}")
        return "create"
    doc = rng.choice(docs)
    if action == "edit":
        doc.setTitle(f"{doc.Title()} +")
        doc.reindexObject()
    elif action == "publish":
        state = api.content.get_state(doc)
        api.content.transition(obj=doc, transition="publish" if state != "published" else "retract")
    elif action == "move":
        target = rng.choice([f for f in folders if f is not folder])
        api.content.move(source=doc, target=target)
    elif action == "reorder":
        folder.moveObjectsToTop([doc.getId()])
    elif action == "share":
        roles = [] if folder.get_local_roles_for_userid("ann") else ["Reader"]
        if roles:
            folder.manage_setLocalRoles("ann", roles)
        else:
            folder.manage_delLocalRoles(["ann"])
        folder.reindexObjectSecurity()
    elif action == "delete":
        api.content.delete(obj=doc)
    return action
