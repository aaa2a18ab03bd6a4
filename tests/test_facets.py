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
from Products.ZCatalog.ZCatalog import CatalogError
from zope.component.hooks import setSite

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

    def test_counts_are_remembered_until_what_they_read_changes(self):
        """A process answers from the counts it made while no commit changed
        what their statement reads; a title does not, a subject or a new
        item does."""
        from plone.pgcatalog import facets

        pg = self.sites[0]
        setSite(pg)
        login(pg.aq_parent, SITE_OWNER_NAME)
        catalog = pg.portal_catalog
        counts = catalog.facetCounts(["Subject"], {})["Subject"].counts
        self.assertEqual(counts, catalog.facetCounts(["Subject"])["Subject"].counts)
        # what is answered is what was remembered: put something else there
        key, (generation, _) = facets._remembered.items()[-1]
        facets._remembered.put(key, generation, [(0, '"remembered"', 7, None), (-2, None, 0, [7])])
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, {"remembered": 7})
        pg["item-001"].setTitle("A new title")
        pg["item-001"].reindexObject()
        transaction.commit()
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, {"remembered": 7})
        pg["item-001"].setSubject(["fresh"])
        pg["item-001"].reindexObject()
        transaction.commit()
        counts = catalog.facetCounts(["Subject"])["Subject"].counts
        self.assertEqual(counts["fresh"], 1)
        # a new item is a new row: counted again
        key, (generation, _) = facets._remembered.items()[-1]
        facets._remembered.put(key, generation, [(0, '"remembered"', 7, None), (-2, None, 0, [7])])
        api.content.create(container=pg, type="Document", id="newer", title="Newer")
        transaction.commit()
        self.assertEqual(catalog.facetCounts(["Subject"])["Subject"].counts, counts)

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
        self.assertEqual(catalog.facetCounts({"getId": quoted}, portal_type="Document")["getId"].counts, {"it's": 0})
