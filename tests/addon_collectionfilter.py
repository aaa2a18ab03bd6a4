"""collective.collectionfilter beside the catalog, compared with a stock site.

Its filter portlets and tiles list the values of an index among a
Collection's results, with counts: ``filteritems.get_filter_items`` runs the
Collection's query (``collection.results(batch=False, brains=True,
custom_query=...)``), reads each brain's metadata column of the same name,
and counts.  It learns the groupable indexes from the catalog
(``schema()``, ``indexes()``, ``_catalog.indexes.get(name)`` for its
``meta_type``, ``getId()`` and ``query_options``): a BooleanIndex gets its
values made booleans, an index with an ``operator`` option gets
``and``/``or`` filters.  A request with ``collectionfilter=1`` narrows the
Collection's listing the same way (its ``IBeforeTraverseEvent`` subscriber
puts ``contentFilter`` on the request).
"""

from collective.collectionfilter.filteritems import get_filter_items
from collective.collectionfilter.interfaces import IGroupByCriteria
from helpers import AddonFixture
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog.testing import PGFunctionalTesting
from test_restapi import RestCase
from test_restapi import SELECTION
from zope.component import getUtility
from zope.component.hooks import setSite
from zope.globalrequest import getRequest

import re


FILTER_FIXTURE = AddonFixture(
    ("collective.collectionfilter",),
    ("collective.collectionfilter:default",),
    name="plone.pgcatalog:CollectionFilter",
)
FILTER_TESTING = PGFunctionalTesting(bases=(FILTER_FIXTURE,), name="plone.pgcatalog:CollectionFilterFunctional")

# (group_by, options): what the portlet passes get_filter_items
FILTERS = {
    "subjects": ("Subject", {}),
    "subjects, alpha chosen": ("Subject", {"request_params": {"Subject": "alpha"}}),
    "subjects, alpha chosen, narrowed": (
        "Subject",
        {"request_params": {"Subject": "alpha"}, "narrow_down": True, "show_count": True},
    ),
    "subjects, and": (
        "Subject",
        {
            "filter_type": "and",
            "narrow_down": True,
            "show_count": True,
            "request_params": {"Subject": ["alpha", "beta"], "Subject_op": "and"},
        },
    ),
    "subjects, or": (
        "Subject",
        {"filter_type": "or", "narrow_down": True, "request_params": {"Subject": ["gamma", "Ümlaut"], "Subject_op": "or"}},
    ),
    "types": ("portal_type", {}),
    "types of alpha": ("portal_type", {"request_params": {"Subject": "alpha"}}),
    "types, events chosen": ("portal_type", {"request_params": {"portal_type": "Event"}, "reverse": True}),
    "types, events chosen, narrowed": (
        "portal_type",
        {"request_params": {"portal_type": "Event"}, "narrow_down": True},
    ),
    "states": ("review_state", {"request_params": {"portal_type": ["Document", "Event"]}}),
    "folderish": ("is_folderish", {}),
    "folderish chosen": ("is_folderish", {"request_params": {"is_folderish": "true"}, "narrow_down": True}),
    "subjects of a text search": ("Subject", {"request_params": {"SearchableText": "stone"}}),
}


class CollectionFilterTest(RestCase):
    layer = FILTER_TESTING

    def setUp(self):
        super().setUp()
        self.add_collection(
            "filtered",
            "Filtered",
            [{"i": "portal_type", "o": SELECTION, "v": ["Document", "News Item", "Event", "Folder"]}],
            sort_on="sortable_title",
        )

    def groupby(self, site) -> dict:
        """The utility's groupable indexes, learnt from *site*'s catalog
        (it keeps them: forget them first)."""
        setSite(site)
        criteria = getUtility(IGroupByCriteria)
        criteria.groupby = None
        return {
            name: (value["index"], value["metadata"], getattr(value["index_modifier"], "__name__", None))
            for name, value in criteria.groupby.items()
        }

    def filter_items(self, site, user: str) -> dict:
        setSite(site)
        # plone.app.uuid keeps the catalog on the request: one site per request
        vars(getRequest()).pop("_catalog", None)
        if user == "Anonymous":
            logout()
        else:
            login(self.layer["app"], SITE_OWNER_NAME)
        self.groupby(site)
        uid = site["filtered"].UID()
        url = site.absolute_url()
        answers = {}
        for label, (group_by, options) in FILTERS.items():
            found = get_filter_items(uid, group_by, cache_enabled=False, **options)
            answers[label] = [{**item, "url": item["url"].replace(url, "<site>")} for item in found or ()]
        login(self.layer["app"], SITE_OWNER_NAME)
        return answers

    def test_groupable_indexes(self):
        ours, stock = (self.groupby(site) for site in self.sites)
        self.assertEqual(ours, stock)
        self.assertEqual(stock["is_folderish"][2], "make_bool")
        self.assertIn("Subject", stock)

    def test_filter_items(self):
        counts = {}
        for user in ("Manager", "Anonymous"):
            ours, stock = (self.filter_items(site, user) for site in self.sites)
            for label in FILTERS:
                with self.subTest(user=user, filter=label):
                    self.assertEqual(ours[label], stock[label])
                    # "All" and at least one value
                    self.assertGreater(len(stock[label]), 1, stock[label])
                    counts[user, label] = {item["value"]: item["count"] for item in stock[label]}
        self.assertGreater(counts["Manager", "subjects"]["all"], counts["Anonymous", "subjects"]["all"])
        self.assertLess(counts["Manager", "types of alpha"]["all"], counts["Manager", "types"]["all"])
        self.assertEqual(set(counts["Manager", "types, events chosen, narrowed"]) - {"all"}, {"Event"})
        self.assertLessEqual(
            counts["Manager", "subjects, and"]["all"], counts["Manager", "subjects, alpha chosen, narrowed"]["all"]
        )

    def test_filtered_listing(self):
        """The Collection's page with a filter in its URL lists the
        filtered results."""
        listings = {}
        for query in ("", "?collectionfilter=1&Subject=alpha", "?collectionfilter=1&Subject=alpha&Subject=beta&Subject_op=and"):
            for user in ("Manager", "Anonymous"):
                with self.subTest(query=query, user=user):
                    (zstatus, zpage), (status, page) = self.both("HTML", "/filtered" + query, user=user)
                    self.assertEqual((zstatus, status), ("200 OK", "200 OK"))
                    pg, z = self.sites
                    expected, got = self.listed(z, zpage), self.listed(pg, page)
                    self.assertEqual(expected, got)
                    self.assertTrue(expected)
                    listings[query, user] = expected
        everything = listings["", "Manager"]
        alpha = listings["?collectionfilter=1&Subject=alpha", "Manager"]
        self.assertLess(len(alpha), len(everything))
        self.assertLessEqual(set(alpha), set(everything))

    def listed(self, site, page: str) -> list[str]:
        """The item links of a listing page, relative to the site."""
        core = page[page.index('id="content-core"') :]
        links = re.findall(r'<a href="([^"]+)"\s+class="[^"]*\burl"', core)
        return [link.replace(site.absolute_url(), "") for link in links]

