"""Pages of searches kept between the catalog changes that concern them
(plone.pgcatalog.kept).

A kept page must be the page the catalog would select: after a commit
that changes what its statement reads (a new item, a workflow change, a
sharing change), in a transaction with changes of its own, and with the
metadata as stored now.  The tests first prove that a search is answered
from memory (a kept page made false shows), then that each change makes
the page be selected again.
"""

from helpers import CatalogTestCase
from helpers import CHANGES
from helpers import random_change
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import database
from plone.pgcatalog import kept

import dataclasses
import random
import transaction


# a page of each kind: the first window of an unsorted and of a sorted
# search, a batch, a batch past the middle (its count first), and the
# search box's glob in relevance order (its expansion first)
QUERIES = (
    {"portal_type": "Document"},
    {"portal_type": "Document", "sort_on": "sortable_title"},
    {"portal_type": "Document", "sort_on": "sortable_title", "b_start": 0, "b_size": 2},
    {"portal_type": "Document", "sort_on": "sortable_title", "b_start": 3, "b_size": 2},
    {"SearchableText": "kept*", "b_start": 0, "b_size": 10},
)

FALSE = "/false/path"


class KeptPagesTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.portal.portal_workflow.setChainForPortalTypes(
            ("Document", "Folder"), "simple_publication_workflow"
        )
        self.folder = api.content.create(container=self.portal, type="Folder", id="kept", title="Kept")
        api.content.transition(obj=self.folder, transition="publish")
        for i in range(5):
            doc = api.content.create(
                container=self.folder, type="Document", id=f"d{i}", title=f"Kept page {i}", description="kept"
            )
            api.content.transition(obj=doc, transition="publish")
        transaction.commit()
        kept.clear()

    def tearDown(self):
        kept.clear()
        transaction.abort()
        login(self.layer["app"], SITE_OWNER_NAME)

    def paths(self, query: dict) -> list[str]:
        return [brain.getPath() for brain in self.catalog(**query)]

    def falsify(self) -> None:
        """Give every row of every kept page a false path."""
        pages = kept._pages.items()
        self.assertTrue(pages)
        for key, (generation, page) in pages:
            false = [
                (row[0], FALSE, *row[2:]) if isinstance(row[1], str) and row[1].startswith("/") else row
                for row in page.rows
            ]
            kept._pages.put(key, generation, dataclasses.replace(page, rows=false))

    def test_a_page_is_kept_while_what_it_reads_is_unchanged(self):
        first = [self.paths(query) for query in QUERIES]
        self.assertTrue(all(first), first)
        self.assertEqual(first, [self.paths(query) for query in QUERIES])  # (kept now)
        self.falsify()
        # proof that the search reads the kept rows: the false paths show
        for query in QUERIES:
            self.assertEqual(set(self.paths(query)), {FALSE}, query)

    def test_a_commit_that_changes_what_a_page_reads_selects_it_again(self):
        for query in QUERIES:
            self.paths(query)
        self.falsify()
        api.content.create(
            container=self.folder, type="Document", id="d5", title="Kept page 5", description="kept"
        )
        transaction.commit()
        for query in QUERIES:
            self.assertNotIn(FALSE, self.paths(query), query)
        self.assertIn("/plone/kept/d5", self.paths(QUERIES[0]))

    def test_a_page_that_keeps_changing_is_selected_at_once(self):
        query = QUERIES[1]
        self.paths(query)
        for i in range(3):
            self.folder[f"d{i}"].title = f"Changed {i}"
            self.folder[f"d{i}"].reindexObject()
            transaction.commit()
            self.assertEqual(self.paths(query)[: i + 1], [f"/plone/kept/d{j}" for j in range(i + 1)])
        moved = [page.moved for _, (_, page) in kept._pages.items()]
        self.assertEqual(moved, [True])
        # the catalog then stands: the next selection finds the generation
        # unchanged, and the page is kept again
        self.paths(query)
        self.assertEqual([page.moved for _, (_, page) in kept._pages.items()], [False])
        self.falsify()
        self.assertEqual(set(self.paths(query)), {FALSE})

    def test_metadata_are_read_fresh(self):
        self.assertIn("Kept page 1", [brain.Title for brain in self.catalog(**QUERIES[1])])
        doc = self.folder["d1"]
        doc.title = "Renamed"
        # a partial reindex: the title's index keeps the old value, the
        # metadata take the new one (ZCatalog updates them too)
        doc.reindexObject(idxs=["exclude_from_nav"])
        transaction.commit()
        for query in QUERIES[:4]:
            titles = [brain.Title for brain in self.catalog(**query)]
            if "/plone/kept/d1" in self.paths(query):
                self.assertIn("Renamed", titles, query)
                self.assertNotIn("Kept page 1", titles, query)

    def test_a_workflow_change_hides_a_kept_item_from_anonymous(self):
        logout()
        seen = [self.paths(query) for query in QUERIES]
        self.assertIn("/plone/kept/d2", seen[0])
        login(self.layer["app"], SITE_OWNER_NAME)
        api.content.transition(obj=self.folder["d2"], transition="retract")
        transaction.commit()
        logout()
        for query in QUERIES:
            self.assertNotIn("/plone/kept/d2", self.paths(query), query)

    def test_a_sharing_change_shows_and_hides_a_kept_item(self):
        api.user.create(email="reader@example.org", username="reader", password="secret-password")
        doc = self.folder["d3"]
        api.content.transition(obj=doc, transition="retract")
        transaction.commit()
        for change, seen in ((None, False), (api.user.grant_roles, True), (api.user.revoke_roles, False)):
            if change is not None:
                login(self.layer["app"], SITE_OWNER_NAME)
                change(username="reader", obj=doc, roles=["Reader"])
                doc.reindexObjectSecurity()  # (as Plone's sharing page does)
                transaction.commit()
            login(self.portal, "reader")
            self.assertEqual("/plone/kept/d3" in self.paths(QUERIES[0]), seen, change)
            self.paths(QUERIES[0])  # (kept)

    def test_a_transaction_with_changes_of_its_own_reads_its_rows(self):
        for query in QUERIES:
            self.paths(query)
        self.falsify()
        doc = self.folder["d4"]
        doc.title = "Kept page four"
        doc.reindexObject()
        for query in QUERIES:
            self.assertNotIn(FALSE, self.paths(query), query)
        transaction.abort()

    def test_a_kept_page_costs_one_statement(self):
        statements = []
        fetch = database.fetch

        def counted(context, sql, *args, **kw):
            statements.append(sql)
            return fetch(context, sql, *args, **kw)

        for query in QUERIES:
            self.paths(query)
        database.fetch = counted
        try:
            for query in QUERIES:
                del statements[:]
                self.paths(query)
                # the generation (with the kept rows' metadata)
                self.assertEqual(
                    len([sql for sql in statements if "pgcatalog_counter" in sql]),
                    len(statements),
                    (query, statements),
                )
                self.assertEqual(
                    len(statements),
                    2 if "b_start" in query and query["b_start"] or "SearchableText" in query else 1,
                    query,
                )
        finally:
            database.fetch = fetch

    def test_kept_pages_answer_as_pages_selected_again(self):
        """Random creations, deletions, transitions, tags, titles, moves,
        reorders and sharing, each committed: every page a search answers
        from memory, as a Manager, as a Member and as Anonymous, equals the
        page selected again (paths, scores, counts, titles)."""
        other = api.content.create(container=self.portal, type="Folder", id="other", title="Other kept")
        api.content.transition(obj=other, transition="publish")
        api.user.create(email="member@example.org", username="member", password="secret-password")
        transaction.commit()
        queries = [
            *QUERIES,
            {"path": {"query": "/plone/kept", "depth": 1}, "sort_on": "getObjPositionInParent"},
            {"review_state": "published", "sort_on": "modified", "sort_order": "descending", "sort_limit": 3},
            {"Subject": "tagged"},
            {"SearchableText": "kept AND page*", "b_start": 0, "b_size": 3},
        ]
        rng = random.Random(51)
        made = iter(range(1000))

        def change() -> str:
            what, doc = random_change(
                rng,
                self.folder,
                other,
                made,
                ["Kept new", "Kept page again", "Nothing kept", "Elsewhere"],
                (*CHANGES, "retitle partly", "reorder", "share"),
            )
            if what == "retitle partly":
                doc.title = rng.choice(["Kept page again", "Nothing kept", "Elsewhere"])
                doc.reindexObject(idxs=["exclude_from_nav"])
            elif what == "reorder":
                self.folder.moveObjectsToTop([rng.choice(self.folder.objectIds())])
            elif what == "share":
                roles = api.user.get_roles(username="member", obj=doc, inherit=False)
                change_roles = api.user.revoke_roles if "Reader" in roles else api.user.grant_roles
                change_roles(username="member", obj=doc, roles=["Reader"])
                doc.reindexObjectSecurity()
            return what

        def answers() -> list:
            found = []
            for user in (SITE_OWNER_NAME, "member", None):
                if user is None:
                    logout()
                else:
                    login(self.layer["app"] if user == SITE_OWNER_NAME else self.portal, user)
                for query in queries:
                    results = self.catalog(**query)
                    found.append(
                        (
                            user,
                            repr(query),
                            [(b.getPath(), b.Title, b.data_record_score_) for b in results],
                            results.actual_result_count,
                        )
                    )
            login(self.layer["app"], SITE_OWNER_NAME)
            return found

        answers()
        kept_once = 0
        for _ in range(30):
            what = change()
            transaction.commit()
            answers()  # (the pages kept, or selected where their reads changed)
            from_memory = answers()
            kept_once += len(kept._pages.items())
            kept.clear()
            self.assertEqual(from_memory, answers(), what)
        self.assertGreater(kept_once, 0)
