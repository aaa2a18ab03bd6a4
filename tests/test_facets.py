"""Facet counts (``portal_catalog.facetCounts``) against ZCatalog by brute force.

For each facet, the stock site searches once per value of the index, with
the facet's own criterion replaced by that value (what a search page's
filter would find if the value were chosen), as the user whose counts
these are.  The counts of plone.pgcatalog's one statement must be those,
for Anonymous, a Member, a Reader through a group and a Manager.
"""

from DateTime import DateTime
from helpers import BothSitesTestCase
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.schema import LOG_LIMIT
from Products.ZCatalog.ZCatalog import CatalogError
from zope.component.hooks import setSite

import contextlib
import psycopg
import random
import transaction


NOW = DateTime()
BUCKETS = {
    "ahead": {"query": NOW, "range": "min"},
    "last ten days": {"query": [NOW - 10, NOW], "range": "min:max"},
    "before": {"query": NOW - 10, "range": "max"},
    "never": {"query": DateTime("1900/01/01"), "range": "max"},
}
# the facets of each query: values of field, keyword and boolean indexes,
# buckets of date indexes
FACETS = {
    "portal_type": None,
    "review_state": None,
    "Subject": None,
    "is_folderish": None,
    "start": BUCKETS,
    "effective": BUCKETS,
}


def queries(root: str) -> list[dict]:
    return [
        {},
        {"portal_type": "Document"},
        {"portal_type": ["Document", "Event", "Folder"], "review_state": "published"},
        {"Subject": {"query": ["alpha", "beta"], "operator": "and"}, "is_folderish": False},
        {"Subject": "gamma", "Subject_operator": "or", "portal_type": "News Item"},
        {"SearchableText": "river OR stone", "path": root},
        {"SearchableText": "fore*", "portal_type": "Event"},
        {"path": {"query": root + "/item-005", "depth": 1}},
        {"start": {"query": NOW, "range": "min"}, "sort_on": "start", "b_size": 3},
        {"portal_type": "Document", "show_inactive": True},
        {"review_state": "no such state"},
    ]


def own_keys(query: dict, name: str) -> list[str]:
    return [key for key in query if key == name or key.startswith(name + "_")]


def brute_force(site, query: dict, facets: dict) -> dict:
    """``{facet: (counts, matches)}`` by one ZCatalog search per value."""
    catalog = site.portal_catalog
    found = {}
    for name, buckets in facets.items():
        others = {key: value for key, value in query.items() if key not in own_keys(query, name)}
        for option in ("sort_on", "b_size"):  # counts are of every match: ZCatalog's sort drops some
            others.pop(option, None)
        if buckets is None:
            values = list(catalog.uniqueValuesFor(name))
            choices = {value: value for value in values}
            held = values  # any of them
        else:
            choices = buckets
            held = {"query": DateTime("1000/01/01"), "range": "min"}
        counts = {}
        for label, value in choices.items():
            number = len(catalog.searchResults({**others, name: value}))
            if number or buckets is not None:
                counts[label] = number
        if name == "is_folderish":  # BooleanIndex reads the first value of a list only
            found[name] = (counts, sum(counts.values()))
        else:
            found[name] = (counts, len(catalog.searchResults({**others, name: held})))
    return found


def as_found(facets: dict) -> dict:
    return {name: (dict(facet.counts), facet.matches) for name, facet in facets.items()}


class FacetCountsTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        for site in self.built_sites():
            api.user.create(email="erin@example.org", username="erin", password="secret-secret")
            api.user.create(email="bob@example.org", username="bob", password="secret-secret")
            api.group.create(groupname="readers")
            api.group.add_user(groupname="readers", username="bob")
            api.group.grant_roles(groupname="readers", obj=site["item-005"], roles=["Reader"])
            site["item-005"].reindexObjectSecurity()
            # a subject only a private page holds
            secret = api.content.create(container=site, type="Document", id="secret", title="Secret")
            secret.setSubject(["classified"])
            secret.reindexObject()
            transaction.commit()

    def test_counts_as_zcatalog_finds_them_for_each_user(self):
        pg, z = self.sites
        users = {
            "anonymous": lambda site: logout(),
            "member": lambda site: login(site, "erin"),
            "reader": lambda site: login(site, "bob"),
            "manager": lambda site: login(site.aq_parent, SITE_OWNER_NAME),
        }
        totals = {}
        for user, log_in in users.items():
            totals[user] = 0
            for zq, pq in zip(
                queries("/".join(z.getPhysicalPath())), queries("/".join(pg.getPhysicalPath())), strict=True
            ):
                setSite(z)
                log_in(z)
                expected = brute_force(z, zq, FACETS)
                setSite(pg)
                log_in(pg)
                got = as_found(pg.portal_catalog.facetCounts(FACETS, pq))
                self.assertEqual(got, expected, f"{user}: {pq!r}")
                # most first, then by value
                for name, (counts, _) in got.items():
                    if FACETS[name] is None:
                        ordered = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
                        self.assertEqual(list(counts.items()), ordered)
                totals[user] += sum(matches for _, matches in got.values())
        # the users see different things: the counts follow
        self.assertEqual(totals["anonymous"], totals["member"])
        self.assertLess(totals["member"], totals["reader"])
        self.assertLess(totals["reader"], totals["manager"])

    def test_a_private_items_values_are_not_counted(self):
        pg = self.sites[0]
        setSite(pg)
        logout()
        self.assertNotIn("classified", pg.portal_catalog.facetCounts(["Subject"])["Subject"].counts)
        login(pg.aq_parent, SITE_OWNER_NAME)
        self.assertEqual(pg.portal_catalog.facetCounts(["Subject"])["Subject"].counts["classified"], 1)

    def test_pending_changes_are_counted(self):
        """An edit of this transaction counts before the commit, as its search finds it."""
        pg = self.sites[0]
        setSite(pg)
        login(pg.aq_parent, SITE_OWNER_NAME)
        catalog = pg.portal_catalog
        before = catalog.facetCounts(["Subject"])["Subject"].counts
        pg["secret"].setSubject(["classified", "fresh"])
        pg["secret"].reindexObject()
        after = catalog.facetCounts(["Subject"])["Subject"].counts
        self.assertEqual(after["fresh"], 1)
        self.assertNotIn("fresh", before)
        transaction.abort()

    def test_counts_are_brought_up_to_date_from_what_changed(self):
        """A process answers from the counts it made, plus what the rows
        changed since add and minus what they held: a title changes
        nothing, a new item with a subject adds one; a rebuild reads
        every row again."""
        from plone.pgcatalog import facets

        pg = self.sites[0]
        setSite(pg)
        login(pg.aq_parent, SITE_OWNER_NAME)
        catalog = pg.portal_catalog
        counts = catalog.facetCounts(["Subject"], {})["Subject"].counts
        self.assertEqual(counts, catalog.facetCounts(["Subject"])["Subject"].counts)
        # what is answered is what was remembered: put something else there
        key, (stamp, _) = facets._remembered.items()[-1]
        facets._remembered.put(key, stamp, (None, facets._Tally({(0, '"remembered"'): 7}, (7,))))
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, {"remembered": 7})
        pg["item-001"].setTitle("A new title")
        pg["item-001"].reindexObject()
        transaction.commit()
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, {"remembered": 7})
        newer = api.content.create(container=pg, type="Document", id="newer", title="Newer")
        newer.setSubject(["fresh"])
        newer.reindexObject()
        transaction.commit()
        found = catalog.facetCounts(["Subject"])["Subject"]
        self.assertEqual((found.counts, found.matches), ({"remembered": 7, "fresh": 1}, 8))
        # two commits since: the row as it was when the counts were made goes
        for subjects in (["fresher"], ["freshest"]):
            newer.setSubject(subjects)
            newer.reindexObject()
            transaction.commit()
        found = catalog.facetCounts(["Subject"])["Subject"]
        self.assertEqual((found.counts, found.matches), ({"remembered": 7, "freshest": 1}, 8))
        api.content.delete(obj=newer)
        transaction.commit()
        found = catalog.facetCounts(["Subject"])["Subject"]
        self.assertEqual((found.counts, found.matches), ({"remembered": 7}, 7))
        # a transaction that changes more rows than the log keeps of one
        # (here by hand, as another writer would) logs no more: counted again
        with psycopg.connect(storage_dsn(catalog)) as conn:
            conn.execute("SELECT set_config('pgcatalog.logged', %s, true)", (str(LOG_LIMIT),))
            conn.execute(
                'UPDATE object_state SET idx = idx || \'{"Title": "By hand"}\' WHERE zoid = %s',
                (int.from_bytes(pg["item-002"]._p_oid, "big"),),
            )
        transaction.begin()  # (a snapshot after that commit)
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, counts)
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, counts)

    def test_counts_brought_up_to_date_are_those_made_again(self):
        """After random edits (subjects, workflow, new items, moves,
        deletes, effective dates), one to three commits at a time, the
        counts brought up to date from the change log are those counted
        again from every row, for each query and user, in this process and
        in one new to the query (from the counts the site's processes
        share); and they were brought up to date, not counted again."""
        from plone.pgcatalog import facets

        pg = self.sites[0]
        setSite(pg)
        root = "/".join(pg.getPhysicalPath())
        users = {"anonymous": logout, "manager": lambda: login(pg.aq_parent, SITE_OWNER_NAME)}
        chosen = [query for number, query in enumerate(queries(root)) if number in (0, 2, 3, 5, 7)]
        rng = random.Random(5)
        made = 0
        with watching_changes() as changed:
            for _round in range(6):
                for _commit in range(rng.randint(1, 3)):
                    login(pg.aq_parent, SITE_OWNER_NAME)
                    made = _random_edit(pg, rng, made)
                    transaction.commit()
                for user, log_in in users.items():
                    log_in()
                    for query in chosen:
                        kept = as_found(pg.portal_catalog.facetCounts(FACETS, query))
                        others = facets._remembered.items()[:-1]
                        facets._remembered.clear()  # (as a process new to the query)
                        shared = as_found(pg.portal_catalog.facetCounts(FACETS, query))
                        forget_counts(pg)
                        again = as_found(pg.portal_catalog.facetCounts(FACETS, query))
                        self.assertEqual(kept, again, f"{user}: {query!r}")
                        self.assertEqual(shared, again, f"{user}: {query!r}")
                        for key, (stamp, tally) in others:  # (the next round brings them up to date)
                            facets._remembered.put(key, stamp, tally)
        self.assertGreater(changed.count("some"), 30)

    def test_counts_follow_the_minute_of_the_effective_range(self):
        """Counts made at one minute of the effective range are brought to
        another by the items that began or ended between the two, without
        a commit: the same as counted again, forward and back."""

        pg = self.sites[0]
        setSite(pg)
        login(pg.aq_parent, SITE_OWNER_NAME)
        then = DateTime("2031/05/01 10:00:00 UTC")
        starting, ending = pg["item-003"], pg["item-004"]
        starting.setEffectiveDate(then + 5 / 1440.0)
        starting.setSubject(["starting"])
        starting.reindexObject()
        ending.setEffectiveDate(then - 1)
        ending.setExpirationDate(then + 5 / 1440.0)
        ending.setSubject(["ending"])
        ending.reindexObject()
        transaction.commit()

        def counted(moment, again=False):
            if again:
                forget_counts(pg)
            found = pg.portal_catalog.facetCounts(["Subject", "portal_type"], effectiveRange=moment)
            return as_found(found)

        with watching_changes() as changed:
            at_then = counted(then)
            self.assertIn("ending", at_then["Subject"][0])
            self.assertNotIn("starting", at_then["Subject"][0])
            for moment in (then + 10 / 1440.0, then, then + 2, then + 1 / 1440.0):
                kept = counted(moment)
                self.assertEqual(kept, counted(moment, again=True), moment)
                counted(moment)
        later = counted(then + 10 / 1440.0)
        self.assertIn("starting", later["Subject"][0])
        self.assertNotIn("ending", later["Subject"][0])
        self.assertEqual(changed.count("some"), 4)

    def test_a_process_new_to_a_query_brings_the_shared_counts_up_to_date(self):
        """Counts made from every row are kept in the database for every
        process: one that does not know the query (just started, another
        instance) reads them and brings them up to date from the change
        log; where the log does not reach their commit, it counts every
        row again and shares that."""
        from plone.pgcatalog import facets
        from plone.pgcatalog import shared

        pg = self.sites[0]
        setSite(pg)
        login(pg.aq_parent, SITE_OWNER_NAME)
        catalog = pg.portal_catalog
        forget_counts(pg)
        counts = catalog.facetCounts(["Subject"])["Subject"].counts
        self.assertEqual(len(shared_rows(pg)), 1)
        key, (stamp, _) = facets._remembered.items()[-1]
        # what a new process answers is what was shared: share something else
        forged = {"at": None, "counts": [[0, '"shared"', 7]], "totals": [7]}
        shared.share(catalog, key, stamp, forged)
        facets._remembered.clear()
        transaction.begin()  # (a snapshot that sees it)
        with watching_changes() as changed:
            self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, {"shared": 7})
            newer = api.content.create(container=pg, type="Document", id="newer", title="Newer")
            newer.setSubject(["fresh"])
            newer.reindexObject()
            transaction.commit()
            facets._remembered.clear()
            found = catalog.facetCounts(["Subject"])["Subject"]
            self.assertEqual((found.counts, found.matches), ({"shared": 7, "fresh": 1}, 8))
        self.assertEqual(changed, ["none", "some"])
        # counts brought up to date are not written: the commit they were made at is
        self.assertEqual([row[1] for row in shared_rows(pg)], [stamp])
        # a commit the log does not hold: counted again, and shared
        shared.share(catalog, key, "1.1", forged)
        facets._remembered.clear()
        transaction.begin()
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, {**counts, "fresh": 1})
        (row,) = shared_rows(pg)
        self.assertNotEqual(row[1], "1.1")
        facets._remembered.clear()
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, {**counts, "fresh": 1})
        # counts the log no longer reaches go with the next that is shared
        with psycopg.connect(storage_dsn(catalog)) as conn:
            conn.execute("INSERT INTO pgcatalog_shared VALUES ('old', -1, '-1.1', '{}')")
        transaction.begin()
        catalog.facetCounts(["portal_type"])
        self.assertEqual(len(shared_rows(pg)), 2)
        self.assertNotIn("old", [key for key, _ in shared_rows(pg)])

    def test_bad_facets_fail_clearly(self):
        pg = self.sites[0]
        setSite(pg)
        catalog = pg.portal_catalog
        for facets, message in (
            (["no_such_index"], "Unknown index"),
            (["allowedRolesAndUsers"], "security terms"),
            (["effectiveRange"], "security terms"),
            (["SearchableText"], "no values to count"),
            (["created"], "no values to count"),
            ({"created": ["not", "a", "mapping"]}, "must map names to queries"),
            ("Subject", "must be index names"),
            (None, "must be index names"),
        ):
            with self.assertRaisesRegex(CatalogError, message):
                catalog.facetCounts(facets)
        # a bad criterion fails as the search fails
        with self.assertRaisesRegex(ValueError, "not valid"):
            catalog.facetCounts(["Subject"], Subject={"query": "a", "no_option": 1})
        with self.assertRaisesRegex(ValueError, "not valid"):
            catalog.searchResults(Subject={"query": "a", "no_option": 1})
        # values are never SQL
        quoted = {"it's": {"query": "x'; DROP TABLE object_state; --", "range": "min"}}
        self.assertEqual(
            catalog.facetCounts({"getId": quoted}, portal_type="Document")["getId"].counts, {"it's": 0}
        )


def shared_rows(site) -> list[tuple[str, str]]:
    """(key, stamp) of the counts the site's processes share."""
    with psycopg.connect(storage_dsn(site)) as conn:
        return conn.execute("SELECT key, stamp FROM pgcatalog_shared ORDER BY counter").fetchall()


def forget_counts(site) -> None:
    """Forget the counts this process made and those the site's processes
    share: the next are counted from every row."""
    from plone.pgcatalog import facets

    facets._remembered.clear()
    with psycopg.connect(storage_dsn(site)) as conn:
        conn.execute("DELETE FROM pgcatalog_shared")


@contextlib.contextmanager
def watching_changes():
    """What each facet statement found changed since its counts were made
    (``none``, ``some``, ``all``), in order, while the block runs."""
    from plone.pgcatalog import facets

    changed = []
    real_read = facets.read

    def read(*args, **kw):
        rows = real_read(*args, **kw)
        changed.extend(row[1].split(" ")[0] for row in rows if row[0] == facets._SINCE_ROW)
        return rows

    facets.read = read
    try:
        yield changed
    finally:
        facets.read = real_read


def _random_edit(site, rng: random.Random, made: int) -> int:
    """One random change of *site*'s content; returns how many items it made so far."""
    items = [obj for obj in site.objectValues() if obj.getId().startswith(("item-", "made-"))]
    obj = rng.choice(items)
    kind = rng.choice(["subjects", "state", "new", "move", "delete", "effective"])
    if kind == "subjects":
        obj.setSubject(tuple(rng.sample(["alpha", "beta", "gamma", "delta", "fresh"], rng.randint(0, 3))))
        obj.reindexObject()
    elif kind == "state":
        state = api.content.get_state(obj)
        api.content.transition(obj=obj, transition="retract" if state == "published" else "publish")
    elif kind == "new":
        made += 1
        new = api.content.create(
            container=site, type=rng.choice(["Document", "News Item"]), id=f"made-{made}"
        )
        new.setSubject(("fresh", "alpha")[: rng.randint(0, 2)])
        new.reindexObject()
    elif kind == "move":
        folders = [f for f in site.objectValues() if f.portal_type == "Folder" and f is not obj]
        if folders and obj.portal_type != "Folder":
            api.content.move(source=obj, target=rng.choice(folders))
    elif kind == "delete" and obj.portal_type != "Folder":
        api.content.delete(obj=obj)
    else:
        obj.setEffectiveDate(DateTime() + rng.choice([-3, 30]))
        obj.reindexObject()
    return made
