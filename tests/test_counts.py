"""Counts remembered between catalog changes (plone.pgcatalog.counts).

A count read back from memory must be the count the catalog would make:
after any commit that changes the catalog, after the counter row is written
anew (a restored database), and inside a transaction with changes of its
own, the catalog counts again.
"""

from helpers import CatalogTestCase
from helpers import random_change
from helpers import pages_not_kept
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import counts
from plone.pgcatalog.connection import storage_dsn


from unittest import mock

import psycopg
import random
import transaction


# the three ways a search counts: in a window over the rows it reads (a
# sorted unbatched search), in a subquery the covering index answers (a
# type alone), and lazily, when a batch's length is asked for
QUERIES = (
    {"portal_type": "Document", "sort_on": "sortable_title"},
    {"portal_type": "Document"},
    {"portal_type": "Document", "sort_on": "sortable_title", "b_start": 0, "b_size": 2},
)


class CountsTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.folder = api.content.create(container=self.portal, type="Folder", id="counted", title="Counted")
        for i in range(5):
            api.content.create(container=self.folder, type="Document", id=f"d{i}", title=f"Doc {i}")
        transaction.commit()
        counts._counts.clear()
        pages_not_kept(self)  # the counts a statement is given

    def tearDown(self):
        counts._counts.clear()
        transaction.abort()

    def lengths(self) -> list[int]:
        return [self.catalog(**query).actual_result_count for query in QUERIES]

    def falsify(self, number: int) -> None:
        """Make every remembered count *number*, at its generation."""
        self.assertTrue(counts._counts.items())
        for key, (generation, (_, stamp)) in counts._counts.items():
            counts._counts.put(key, generation, (number, stamp))

    def test_remembered_count_is_read_while_the_catalog_is_unchanged(self):
        self.assertEqual(self.lengths(), [5, 5, 5])
        self.falsify(999)
        # proof that the statement reads the remembered number, not a count
        self.assertEqual(self.lengths(), [999, 999, 999])
        self.assertEqual(len(self.catalog(portal_type="Document", sort_on="sortable_title")), 999)

    def test_a_commit_counts_again(self):
        self.assertEqual(self.lengths(), [5, 5, 5])
        self.falsify(999)
        api.content.create(container=self.folder, type="Document", id="new", title="New")
        transaction.commit()
        self.assertEqual(self.lengths(), [6, 6, 6])
        api.content.delete(obj=self.folder["d0"])
        transaction.commit()
        self.assertEqual(self.lengths(), [5, 5, 5])
        # a new title changes the sort key, not the type
        self.falsify(999)
        self.folder["d1"].title = "Changed"
        self.folder["d1"].reindexObject()
        transaction.commit()
        self.assertEqual(self.lengths(), [5, 999, 5])

    def test_a_count_stands_while_what_it_reads_is_unchanged(self):
        queries = {
            "type": {"portal_type": "Document"},
            # sorted: without sort_on, text matches are scored, and counted with it
            "title": {"Title": "Doc", "sort_on": "created"},
            "text": {"SearchableText": "Doc", "sort_on": "created"},
            "children": {"path": {"query": "/plone/counted", "depth": 1}},
            "published": {"portal_type": "Document", "review_state": "published"},
            "cataloged": {},  # searchAll: every row
        }

        def lengths():
            found = {name: len(self.catalog(**query)) for name, query in queries.items() if query}
            found["cataloged"] = len(self.catalog.searchAll())
            return found

        self.portal.portal_workflow.setChainForPortalTypes(("Document",), "simple_publication_workflow")
        self.portal.portal_workflow.updateRoleMappings()
        for doc in self.folder.objectValues():
            doc.reindexObject()  # private now
        transaction.commit()
        self.assertEqual(
            lengths(), {"type": 5, "title": 5, "text": 5, "children": 5, "published": 0, "cataloged": 7}
        )

        # an edit: the title, the text and the modification date
        self.falsify(999)
        self.folder["d1"].title = "Changed"
        self.folder["d1"].reindexObject()
        transaction.commit()
        # (a search that finds nothing knows its count: nothing to remember)
        self.assertEqual(
            lengths(), {"type": 999, "title": 4, "text": 4, "children": 999, "published": 0, "cataloged": 999}
        )

        # a rename moves a row: every count (every statement reads the
        # rows of its site's paths, and a move may cross sites)
        self.falsify(999)
        api.content.rename(obj=self.folder["d2"], new_id="renamed")
        transaction.commit()
        self.assertEqual(
            lengths(), {"type": 5, "title": 4, "text": 4, "children": 5, "published": 0, "cataloged": 7}
        )

        # a workflow transition: the state and the security terms every
        # search but a Manager's unrestricted one reads
        self.falsify(999)
        api.content.transition(obj=self.folder["d3"], transition="publish")
        transaction.commit()
        self.assertEqual(
            lengths(), {"type": 5, "title": 4, "text": 4, "children": 5, "published": 1, "cataloged": 999}
        )

        # an item cataloged or uncataloged: every count
        self.falsify(999)
        self.catalog.unindexObject(self.folder["d4"])
        transaction.commit()
        self.assertEqual(
            lengths(), {"type": 4, "title": 3, "text": 3, "children": 4, "published": 1, "cataloged": 6}
        )

    def test_a_count_asked_for_alone_is_brought_up_to_date(self):
        """A batch's length is counted in a statement of its own: after a
        commit that changed what it reads, the remembered count plus the
        rows the commit changed as they are, minus as they were.  Each
        remembered count is made 1,000 too high before each round: one
        brought up to date stays 1,000 too high, one made again does not."""
        wf = self.portal.portal_workflow
        wf.setChainForPortalTypes(("Document",), "simple_publication_workflow")
        wf.updateRoleMappings()
        for doc in self.folder.objectValues():
            doc.reindexObject()
        other = api.content.create(container=self.portal, type="Folder", id="other", title="Other")
        # (the first value of a keyword index decides its kind: a schema
        # change, after which every count is made again)
        other.setSubject(["tagged"])
        other.reindexObject()
        transaction.commit()
        batch = {"b_start": 0, "b_size": 1, "sort_on": "sortable_title"}
        queries = [
            {"portal_type": "Document"},
            {"portal_type": "Document", "review_state": "published"},
            {"Subject": "tagged"},
            {"path": {"query": "/plone/counted", "depth": 1}},
            {"SearchableText": "Doc"},
        ]
        rng = random.Random(33)
        made = iter(range(1000))

        def change() -> None:
            random_change(rng, self.folder, other, made, ["Doc new", "Doc again", "Nothing"])

        def lengths() -> list[int]:
            found = []
            for anonymous in (False, True):
                if anonymous:
                    logout()
                found += [
                    self.catalog.searchResults(**query, **batch).actual_result_count for query in queries
                ]
                login(self.layer["app"], SITE_OWNER_NAME)
            return found

        def made_again() -> list[int]:
            counts._counts.clear()
            return lengths()

        brought = 0
        for _ in range(8):
            expected = made_again()
            for key, (generation, (number, stamp)) in counts._counts.items():
                counts._counts.put(key, generation, (number + 1000, stamp))
            for _ in range(rng.randint(1, 3)):
                change()
                transaction.commit()
            after = lengths()
            now = made_again()
            for query, got, right, before in zip(queries * 2, after, now, expected, strict=True):
                # (an empty first batch tells its length: nothing counted,
                # nothing remembered)
                self.assertEqual(got, right + 1000 if right and before else right, (query, before))
                brought += got != before + 1000
        self.assertGreater(brought, 10)  # (and the others stood: nothing they read changed)

    def test_the_stamps_name_their_transaction(self):
        # a database restored from a copy, or a test's snapshot put back,
        # brings the stamps of the content it holds; a stamp of a later
        # commit names that commit, so none passes for other content
        def stamp(name):
            with psycopg.connect(storage_dsn(self.catalog)) as conn:
                return conn.execute(
                    "SELECT value, stamps->>%s FROM pgcatalog_counter WHERE id = 1", (name,)
                ).fetchone()

        stamps = []
        for title in ("One", "Two"):
            self.folder["d1"].title = title
            self.folder["d1"].reindexObject()
            transaction.commit()
            value, title_stamp = stamp("Title")
            self.assertEqual(title_stamp.split(".")[0], str(value))
            self.assertNotEqual(stamp("portal_type")[1], title_stamp)
            stamps.append(title_stamp)
        self.assertNotEqual(stamps[0].split(".")[1], stamps[1].split(".")[1])
        # the counter row written anew with the same stamps: the same content
        self.assertEqual(self.lengths(), [5, 5, 5])
        self.falsify(999)
        with psycopg.connect(storage_dsn(self.catalog), autocommit=True) as conn:
            conn.execute("UPDATE pgcatalog_counter SET value = value WHERE id = 1")
        transaction.begin()
        self.assertEqual(self.lengths(), [999, 999, 999])

    def test_a_change_by_hand_is_stamped_at_its_commit(self):
        self.assertEqual(self.lengths(), [5, 5, 5])
        self.falsify(999)
        with psycopg.connect(storage_dsn(self.catalog)) as conn:
            conn.execute(
                """UPDATE object_state SET idx = idx || '{"portal_type": "Page"}' WHERE path LIKE '%%/counted/d1'"""
            )
        transaction.begin()  # a snapshot that sees it
        # (the searches read the typed portal_type column, which SQL by hand left alone)
        self.assertEqual(self.lengths(), [5, 5, 5])

    def test_values_in_another_order_are_no_change(self):
        # keywords are kept sorted: the same values listed in another order
        # (an editor's, or a set's in another process) leave counts standing
        doc = self.folder["d1"]
        tagged = {"Subject": ["alpha", "beta"], "portal_type": "Document"}
        doc.setSubject(["beta", "alpha"])
        doc.reindexObject()
        transaction.commit()
        self.assertEqual(len(self.catalog(**tagged)), 1)
        self.falsify(999)
        doc.setSubject(["alpha", "beta"])
        doc.reindexObject()
        transaction.commit()
        self.assertEqual(len(self.catalog(**tagged)), 999)  # remembered
        doc.setSubject(["gamma"])
        doc.reindexObject()
        transaction.commit()
        self.assertEqual(len(self.catalog(**tagged)), 0)  # a change: counted

    def test_a_row_written_by_hand_is_noted(self):
        # whoever writes a row (a commit, an undo, SQL by hand) notes what
        # it changed, for the commit's stamps (test_undo counts after an undo)
        with psycopg.connect(storage_dsn(self.catalog)) as conn:
            zoid = conn.execute("SELECT zoid FROM object_state WHERE path LIKE '%%/counted/d1'").fetchone()[0]

            def noted(sql):
                conn.execute("SELECT set_config('pgcatalog.changed', '', true)")
                conn.execute(sql, (zoid,))
                found = conn.execute("SELECT current_setting('pgcatalog.changed')").fetchone()[0]
                conn.rollback()
                return sorted(found.split())

            self.assertEqual(
                noted(
                    """UPDATE object_state SET idx = idx || '{"Title": "x", "getId": "y"}' WHERE zoid = %s"""
                ),
                ["Title", "getId"],
            )
            self.assertEqual(noted("UPDATE object_state SET idx = idx - 'getId' WHERE zoid = %s"), ["getId"])
            self.assertEqual(noted("UPDATE object_state SET path = path || 'x' WHERE zoid = %s"), ["#"])
            self.assertEqual(noted("UPDATE object_state SET meta = meta WHERE zoid = %s"), [])
            self.assertEqual(noted("UPDATE object_state SET idx = NULL WHERE zoid = %s"), ["#"])

    def test_pending_changes_are_counted_and_not_remembered(self):
        self.assertEqual(self.lengths(), [5, 5, 5])
        self.falsify(999)
        api.content.create(container=self.folder, type="Document", id="new", title="New")
        self.assertEqual(self.lengths(), [6, 6, 6])
        remembered = {number for _, (_, (number, _)) in counts._counts.items()}
        self.assertEqual(remembered, {999})  # nothing of this transaction's rows
        transaction.abort()
        self.assertEqual(self.lengths(), [999, 999, 999])

    def test_other_queries_and_users_have_their_own_counts(self):
        self.portal.portal_workflow.setChainForPortalTypes(("Document",), "simple_publication_workflow")
        for i in range(2):  # private
            api.content.create(container=self.folder, type="Document", id=f"p{i}", title=f"Private {i}")
        transaction.commit()
        self.assertEqual(self.lengths(), [7, 7, 7])
        self.falsify(999)
        self.assertEqual(len(self.catalog(portal_type="Document", Title="Doc")), 5)
        self.assertEqual(len(self.catalog(portal_type="Folder")), 1)
        # Plone's security terms are parameters of the statement: another
        # user's search is another count
        logout()
        self.assertEqual(len(self.catalog.searchResults(portal_type="Document")), 5)
        login(self.layer["app"], SITE_OWNER_NAME)
        self.assertEqual(len(self.catalog.searchResults(portal_type="Document")), 999)

    def test_a_count_with_the_effective_range_is_brought_up_to_date_from_minute_to_minute(self):
        """Plone adds the effective range at the minute for who may not see
        inactive items: one count stands for every minute, brought up to
        date with the rows whose range begins or ends between two minutes.
        Each remembered count is made 1,000 too high: brought up to date, it
        stays so."""
        from DateTime import DateTime

        base = DateTime("2030/01/01 12:00 UTC")
        docs = sorted(self.folder.objectValues(), key=lambda doc: doc.getId())
        docs[0].setEffectiveDate(base + 3 / 1440.0)  # from 12:03
        docs[0].reindexObject()
        docs[1].setExpirationDate(base + 6 / 1440.0)  # until 12:06
        docs[1].reindexObject()
        transaction.commit()
        query = {"portal_type": "Document", "sort_on": "sortable_title", "b_start": 0, "b_size": 1}

        def length(minutes: int) -> int:
            transaction.begin()
            return self.catalog(**query, effectiveRange=base + minutes / 1440.0).actual_result_count

        def made_again(minutes: int) -> int:
            counts._counts.clear()
            return length(minutes)

        self.assertEqual([made_again(m) for m in (0, 2, 4, 8)], [4, 4, 5, 4])
        counts._counts.clear()
        self.assertEqual(length(0), 4)
        self.falsify(1000)
        self.assertEqual(length(2), 1000)  # (no range begins or ends between)
        self.assertEqual(length(4), 1001)  # (one begins)
        self.assertEqual(length(8), 1000)  # (one ends)
        self.assertEqual(length(8), 1000)
        self.assertEqual(len(counts._counts.items()), 1)  # (one count, whatever the minute)
        # a commit between minutes: its rows as well
        api.content.create(container=self.folder, type="Document", id="new", title="New")
        transaction.commit()
        self.assertEqual(length(9), 1001)
        self.assertEqual(made_again(9), 5)

    def test_a_process_new_to_a_count_brings_the_shared_one_up_to_date(self):
        """A count of many rows made from every row is kept for every
        process: one that remembers none (just started, another instance)
        brings it up to date from the change log; where the log does not
        reach its commit, it counts every row again and shares that.  Each
        user's count is their own."""
        from plone.pgcatalog import shared

        query = {"portal_type": "Document", "sort_on": "sortable_title", "b_start": 0, "b_size": 1}

        def length() -> int:
            counts._counts.clear()  # (a process new to the count)
            transaction.begin()  # (a snapshot that sees what was shared)
            return self.catalog(**query).actual_result_count

        def kept() -> list[tuple]:
            with psycopg.connect(storage_dsn(self.catalog)) as conn:
                return conn.execute(
                    "SELECT key, stamp, answer FROM pgcatalog_shared WHERE answer ? 'count' ORDER BY counter"
                ).fetchall()

        logout()
        anonymous = length()
        login(self.layer["app"], SITE_OWNER_NAME)
        self.assertEqual(length(), 5)
        self.assertEqual(kept(), [])  # (too few rows to share)
        with mock.patch.object(counts, "SHARED_FROM", 1):
            self.assertEqual(length(), 5)
            ((digest, stamp, answer),) = kept()
            self.assertEqual(answer, {"count": 5})
            # what a new process answers is what was shared: share something else
            (remembered,) = [key for key, _ in counts._counts.items()]
            self.assertEqual(shared.digest(remembered), digest)
            shared.share(self.catalog, remembered, stamp, {"count": 1005})
            self.assertEqual(length(), 1005)
            api.content.create(container=self.folder, type="Document", id="new", title="New")
            transaction.commit()
            self.assertEqual(length(), 1006)  # (brought up to date, not shared)
            self.assertEqual(kept(), [(digest, stamp, {"count": 1005})])
            # another user's count is another
            logout()
            self.assertEqual(length(), anonymous + 1)
            login(self.layer["app"], SITE_OWNER_NAME)
            # a commit the log does not hold: counted again, and shared
            shared.share(self.catalog, remembered, "1.1", {"count": 1005})
            self.assertEqual(length(), 6)
            mine = [row[1:] for row in kept() if row[0] == digest]
            self.assertEqual(len(mine), 1)
            self.assertNotEqual(mine[0][0], "1.1")
            self.assertEqual(mine[0][1], {"count": 6})
            self.assertEqual(length(), 6)


class KeyTest(CatalogTestCase):
    def test_parameters_without_a_value_key_are_not_remembered(self):
        self.assertIsNone(counts._key("dsn", "/plone", "where", [object()]))
        self.assertIsNone(counts._key("dsn", "/plone", "where", [{"a": 1}]))
        self.assertEqual(
            counts._key("dsn", "/plone", "w", [["a", "b"], 1]),
            counts._key("dsn", "/plone", "w", [("a", "b"), 1]),
        )
        # 1, True and 1.0 are equal in Python, not in SQL
        self.assertNotEqual(counts._key("d", "/p", "w", [1]), counts._key("d", "/p", "w", [True]))
