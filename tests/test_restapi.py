"""REST clients and collections, on both sites: plone.restapi's ``@search``
and ``@querystring-search``, and a Collection's results, as JSON and as its
listing page.  What the stock ZCatalog site answers is the expected answer.
"""

from DateTime import DateTime
from helpers import BothSitesTestCase
from plone import api
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.testing.zope import Browser
from urllib.parse import quote
from zope.component.hooks import setSite

import json
import re
import transaction


# What differs between two sites built seconds apart: times, generated ids
# and what is derived from them
VARYING = {
    "UID",
    "@uid",
    "created",
    "modified",
    "effective",
    "CreationDate",
    "ModificationDate",
    "EffectiveDate",
    "ExpirationDate",
    "expires",
    "Date",
    "image_scales",
    "cmf_uid",
    "lock",
    "version",
    "etag",
}
SELECTION = "plone.app.querystring.operation.selection.any"


class RestCase(BothSitesTestCase):
    """Both sites built, each searched through Zope's publisher."""

    maxDiff = None

    def setUp(self):
        super().setUp()
        for _site in self.built_sites():
            pass
        self.roots = {site: "/".join(site.getPhysicalPath()) for site in self.sites}
        self.uids = {}
        for site in self.sites:
            setSite(site)
            brains = site.portal_catalog.unrestrictedSearchResults(path=self.roots[site])
            self.uids[site] = {b.UID: b.getPath()[len(self.roots[site]) :] for b in brains}

    def request(self, site, method: str, path: str, body=None, user="Manager"):
        """(status, JSON or page text) of a request to *site* + *path*,
        published as a browser would send it."""
        browser = Browser(self.layer["app"])
        browser.handleErrors = True
        browser.raiseHttpErrors = False
        if user == "Manager":
            browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        url = site.absolute_url() + path.format(root=self.roots[site])
        if method == "HTML":
            browser.open(url)
            return browser.headers["status"], browser.contents
        browser.addHeader("Accept", "application/json")
        if method == "GET":
            browser.open(url)
        else:
            browser.post(url, json.dumps(body), "application/json")
        status = browser.headers["status"]
        return status, self.normalized(site, json.loads(browser.contents))

    def add_collection(self, id: str, title: str, query: list, **options) -> None:
        """A published Collection *id* at the root of both sites."""
        for site in self.sites:
            setSite(site)
            collection = api.content.create(
                container=site, type="Collection", id=id, title=title, query=query, **options
            )
            api.content.transition(obj=collection, transition="publish")
            # each site's own commit: CMFCore's indexing queue is processed
            # with the catalog of the current site
            transaction.commit()

    def normalized(self, site, value):
        """*value* with the site's URL and path made ``<site>``, its UIDs
        made paths and what varies between the builds left out."""
        if isinstance(value, dict):
            return {k: self.normalized(site, v) for k, v in value.items() if k not in VARYING}
        if isinstance(value, list):
            return [self.normalized(site, v) for v in value]
        if isinstance(value, str):
            if value in self.uids[site]:
                return "<uid " + self.uids[site][value] + ">"
            value = value.replace(site.absolute_url(), "<site>").replace(self.roots[site], "<site>")
            return value.replace(quote(self.roots[site], safe=""), "<site>")
        return value

    def both(self, method: str, path: str, body=None, user="Manager"):
        """(ZCatalog's answer, ours)."""
        pg, z = self.sites
        return self.request(z, method, path, body, user), self.request(pg, method, path, body, user)

    def assertSame(self, method: str, path: str, body=None, user="Manager"):
        expected, got = self.both(method, path, body, user)
        self.assertEqual(expected, got, f"{method} {path} {body or ''} as {user}")
        return got


class SearchEndpointTest(RestCase):
    def test_search(self):
        today = DateTime().earliestTime().ISO8601()
        for query in (
            "portal_type=Document&sort_on=sortable_title",
            "portal_type=Event&sort_on=start&metadata_fields=_all",
            "portal_type=Document&sort_on=sortable_title&fullobjects=1&b_size=3",
            "review_state=published&sort_on=sortable_title&sort_order=descending&b_size=4&b_start=4",
            f"start.query={quote(today)}&start.range=min&sort_on=start&metadata_fields=start",
            f"end.query={quote(today)}&end.range=max&portal_type=Event&sort_on=sortable_title",
            "is_folderish=true&sort_on=sortable_title",
            "is_folderish=false&exclude_from_nav=true&sort_on=sortable_title",
            "SearchableText=river&sort_on=sortable_title&metadata_fields=Subject",
            "SearchableText=stone",  # in order of relevance
            "Subject=alpha&Subject=beta&sort_on=sortable_title",
            "Subject.query=alpha&Subject.query=beta&Subject.operator=and&sort_on=sortable_title",
            "path.query={root}/item-005&path.depth=1&sort_on=getObjPositionInParent",
            "path.depth=1&sort_on=getObjPositionInParent&b_size=5",
            "sort_on=sortable_title&sort_limit=7",
            "no_such_index=x&portal_type=Folder&sort_on=sortable_title",
        ):
            with self.subTest(query=query):
                status, answer = self.assertSame("GET", "/@search?" + query)
                self.assertEqual(status, "200 OK")
                self.assertGreater(answer["items_total"], 0)
        # unsorted: in the order of ZCatalog's record ids, which it draws
        # at random: the same records, in any order
        for query in ("b_size=100", "sort_on=no_such_index&b_size=100", "portal_type=Folder"):
            with self.subTest(query=query):
                (zstatus, expected), (status, got) = self.both("GET", "/@search?" + query)
                self.assertEqual((zstatus, status), ("200 OK", "200 OK"))
                for answer in (expected, got):
                    answer["items"].sort(key=lambda item: item["@id"])
                self.assertEqual(expected, got)
                self.assertEqual(len(got["items"]), got["items_total"])

    def test_search_as_anonymous(self):
        for query in (
            "sort_on=sortable_title",
            "portal_type=Document&sort_on=sortable_title",
            "SearchableText=river",
        ):
            with self.subTest(query=query):
                status, answer = self.assertSame("GET", "/@search?" + query, user="Anonymous")
                self.assertEqual(status, "200 OK")
                # published content, and the site (which has no workflow)
                states = {item["review_state"] for item in answer["items"]}
                self.assertLessEqual(states, {"published", None}, answer["items"])

    def test_as_people_type(self):
        """``as_you_type`` and ``sort_on=relevance``: what ZCatalog finds
        for the same words in its query language."""
        pg, z = self.sites
        # (plone.restapi's @search fails on SearchableText.query: the flat option)
        typed = "SearchableText=river%20sto&SearchableText_as_you_type="
        for flag, stock in (("1", "river%20AND%20sto*"), ("true", "river%20AND%20sto*"), ("0", "river%20sto")):
            for user in ("Manager", "Anonymous"):
                with self.subTest(flag=flag, user=user):
                    expected = self.found(z, f"SearchableText={stock}", user)
                    got = self.found(pg, f"{typed}{flag}&sort_on=relevance", user)
                    self.assertEqual(expected, got)
                    if flag != "0" and user == "Manager":
                        self.assertGreater(got[1], 0)
        # another text index, in the dotted form
        got = self.found(pg, "Title.query=riv&Title.as_you_type=true&sort_on=relevance")
        self.assertEqual(got, self.found(z, "Title=riv*"))
        self.assertGreater(got[1], 0)
        # a bad value fails as a bad operator does on ZCatalog's site
        status, answer = self.request(pg, "GET", f"/@search?{typed}perhaps")
        self.assertIn("'as_you_type' must be true or false", answer["message"])
        self.assertEqual(status, self.request(z, "GET", "/@search?Subject=a&Subject_operator=xor")[0])

    def found(self, site, query: str, user: str = "Manager") -> tuple[list, int]:
        """The items of ``@search?query`` and how many there are."""
        status, answer = self.request(site, "GET", "/@search?" + query, user=user)
        self.assertEqual(status, "200 OK", answer)
        return answer["items"], answer["items_total"]

    def test_folder_contents_after_a_move(self):
        """Volto's folder contents: children by position, after moving one."""
        for site in self.sites:
            setSite(site)
            folder = site["item-005"]
            folder.moveObjectsToTop([folder.objectIds()[-1]])
        transaction.commit()
        path = "/item-005/@search?path.depth=1&sort_on=getObjPositionInParent&metadata_fields=getId"
        status, answer = self.assertSame("GET", path)
        self.assertEqual(status, "200 OK")
        setSite(self.sites[0])
        self.assertEqual([item["getId"] for item in answer["items"]], self.sites[0]["item-005"].objectIds())


class QuerystringSearchTest(RestCase):
    def test_querystring_search(self):
        for body in (
            {"query": [{"i": "portal_type", "o": SELECTION, "v": ["Document", "News Item"]}]},
            {
                "query": [{"i": "portal_type", "o": SELECTION, "v": ["Document", "Event"]}],
                "sort_on": "sortable_title",
                "sort_order": "descending",
                "b_size": 4,
                "b_start": 2,
            },
            {
                "query": [
                    {"i": "review_state", "o": SELECTION, "v": ["published"]},
                    {"i": "Subject", "o": "plone.app.querystring.operation.selection.all", "v": ["alpha"]},
                ],
                "sort_on": "sortable_title",
                "metadata_fields": ["Subject", "review_state"],
            },
            {
                "query": [
                    {
                        "i": "SearchableText",
                        "o": "plone.app.querystring.operation.string.contains",
                        "v": "river",
                    }
                ],
                "sort_on": "sortable_title",
            },
            {
                "query": [{"i": "is_folderish", "o": "plone.app.querystring.operation.boolean.isTrue"}],
                "sort_on": "sortable_title",
            },
            {
                "query": [
                    {
                        "i": "start",
                        "o": "plone.app.querystring.operation.date.lessThanRelativeDate",
                        "v": "7",
                    },
                    {"i": "portal_type", "o": SELECTION, "v": ["Event"]},
                ],
                "sort_on": "start",
                "limit": 3,
            },
            {
                "query": [
                    {
                        "i": "path",
                        "o": "plone.app.querystring.operation.string.absolutePath",
                        "v": "/item-005::1",  # one folder: positions are unique
                    }
                ],
                "sort_on": "getObjPositionInParent",
            },
            {"query": [{"i": "portal_type", "o": SELECTION, "v": ["Folder"]}], "sort_on": "no_such_index"},
        ):
            with self.subTest(body=body):
                if body.get("sort_on") in (None, "no_such_index"):
                    # unsorted: ZCatalog's order is that of its record ids,
                    # sequential from a random start that a new connection
                    # draws again: the same records, in any order
                    (zstatus, expected), (status, answer) = self.both("POST", "/@querystring-search", body)
                    self.assertEqual(zstatus, status)
                    for each in (expected, answer):
                        each["items"].sort(key=lambda item: item["@id"])
                    self.assertEqual(expected, answer)
                else:
                    status, answer = self.assertSame("POST", "/@querystring-search", body)
                self.assertEqual(status, "200 OK")
                self.assertGreater(answer["items_total"], 0)


class FacetCountTest(RestCase):
    """``POST @facet-count`` on our site against one ``@querystring-search``
    per value on the stock site, with that value chosen instead of the
    facet's own criterion."""

    CRITERIA = [
        {"i": "portal_type", "o": SELECTION, "v": ["Document", "Event", "Folder", "News Item"]},
        {"i": "SearchableText", "o": "plone.app.querystring.operation.string.contains", "v": "river"},
        {"i": "Subject", "o": SELECTION, "v": ["alpha", "gamma"]},
    ]

    def stock_total(self, criteria: list, user: str) -> int:
        status, found = self.request(self.sites[1], "POST", "/@querystring-search", {"query": criteria}, user)
        self.assertEqual(status, "200 OK", found)
        return found["items_total"]

    def test_counts_as_querystring_searches_find_them(self):
        pg, z = self.sites
        facets = ["portal_type", "review_state", "Subject"]
        for user in ("Manager", "Anonymous"):
            status, got = self.request(pg, "POST", "/@facet-count", {"query": self.CRITERIA, "facets": facets}, user)
            self.assertEqual(status, "200 OK", got)
            self.assertEqual(got["@id"], "<site>/@facet-count")
            for facet in facets:
                others = [row for row in self.CRITERIA if row["i"] != facet]
                expected = {}
                for value in z.portal_catalog.uniqueValuesFor(facet):
                    number = self.stock_total([*others, {"i": facet, "o": SELECTION, "v": [value]}], user)
                    if number:
                        expected[value] = number
                data = got["facets"][facet]["data"]
                self.assertEqual({row["value"]: row["count"] for row in data}, expected, (user, facet))
                self.assertEqual([row["count"] for row in data], sorted(expected.values(), reverse=True))
                if facet != "Subject":  # one value an item: the count is every item found without the facet
                    self.assertEqual(got["facets"][facet]["count"], self.stock_total(others, user), (user, facet))
                    self.assertEqual(got["facets"][facet]["count"], sum(expected.values()))
            if user == "Manager":
                self.assertGreater(sum(row["count"] for row in got["facets"]["Subject"]["data"]), 0)

    def test_the_proposals_single_facet_and_date_buckets(self):
        pg = self.sites[0]
        status, one = self.request(pg, "POST", "/@facet-count", {"query": self.CRITERIA, "facet": "review_state"})
        self.assertEqual(status, "200 OK", one)
        status, several = self.request(
            pg, "POST", "/@facet-count", {"query": self.CRITERIA, "facets": ["review_state", "Subject"]}
        )
        self.assertEqual(one["facets"]["review_state"], several["facets"]["review_state"])
        dates = "plone.app.querystring.operation.date."
        buckets = {
            "ahead": [{"o": dates + "afterToday"}],
            "next week": [{"o": dates + "largerThanRelativeDate", "v": "7"}],
            "before": [{"o": dates + "beforeToday"}],
        }
        status, got = self.request(pg, "POST", "/@facet-count", {"facets": {"start": buckets, "portal_type": None}})
        self.assertEqual(status, "200 OK", got)
        data = got["facets"]["start"]["data"]
        self.assertEqual([row["value"] for row in data], ["ahead", "next week", "before"])
        for row in data:
            expected = self.stock_total([{"i": "start", **buckets[row["value"]][0]}], "Manager")
            self.assertEqual(row["count"], expected, row)
        self.assertGreater(data[0]["count"] + data[2]["count"], 0)  # the events start around today
        self.assertEqual(got["facets"]["start"]["count"], self.stock_total([{"i": "portal_type", "o": SELECTION, "v": ["Event"]}], "Manager"))

    def test_bad_requests(self):
        pg, z = self.sites
        for body, status in (
            ({"query": self.CRITERIA}, "400"),
            ({"facets": ["allowedRolesAndUsers"]}, "400"),
            ({"facets": ["no_such_index"]}, "400"),
            ({"facets": {"created": [1, 2]}}, "400"),
            ({"facets": {"created": {"soon": [{"o": "no.such.operation"}]}}}, "400"),
            ({"facet": "Subject", "query": [{"i": "Subject", "o": "no.such.operation", "v": "x"}]}, "400"),
        ):
            got_status, got = self.request(pg, "POST", "/@facet-count", body)
            self.assertTrue(got_status.startswith(status), (body, got_status, got))
            self.assertNotIn("Traceback", json.dumps(got))
        # a site whose catalog is ZCatalog has no facet counts
        got_status, _ = self.request(z, "POST", "/@facet-count", {"facet": "Subject"})
        self.assertTrue(got_status.startswith("404"), got_status)


class SuggestionsTest(RestCase):
    """``GET @suggestions``: "did you mean" through Zope's publisher."""

    def test_the_sites_words_for_a_misspelt_one(self):
        pg, z = self.sites
        for user in ("Manager", "Anonymous"):
            status, found = self.request(pg, "GET", "/@suggestions?SearchableText=rivr&limit=3", user=user)
            self.assertEqual(status, "200 OK", found)
            self.assertEqual(found["@id"], "<site>/@suggestions")
            self.assertEqual(found["items"][0], "river", user)
            self.assertLessEqual(len(found["items"]), 3)
        # other parameters limit the words as they limit the results
        status, found = self.request(pg, "GET", "/@suggestions?SearchableText=rivr&portal_type=NoSuchType")
        self.assertEqual((status, found["items"]), ("200 OK", []))
        for bad in ("?SearchableText=rivr&limit=x", "?SearchableText=rivr&limit=0", "?portal_type=Document"):
            status, found = self.request(pg, "GET", "/@suggestions" + bad)
            self.assertTrue(status.startswith("400"), (bad, status, found))
        status, _ = self.request(z, "GET", "/@suggestions?SearchableText=rivr")
        self.assertTrue(status.startswith("404"), status)


class SnippetsTest(RestCase):
    """``metadata_fields=snippet``: each item's passage with the words found marked."""

    def test_snippets_of_a_text_search(self):
        pg, z = self.sites
        for user in ("Manager", "Anonymous"):
            status, found = self.request(
                pg, "GET", "/@search?SearchableText=river&metadata_fields=snippet&sort_on=sortable_title", user=user
            )
            self.assertEqual(status, "200 OK", found)
            self.assertGreater(found["items_total"], 0)
            for item in found["items"]:
                self.assertRegex(item["snippet"], r"<mark>[Rr]iver</mark>", item)
            # the items are those ZCatalog's site finds
            stock = self.found_ids(z, "SearchableText=river&sort_on=sortable_title", user)
            self.assertEqual([item["@id"] for item in found["items"]], stock)
        status, found = self.request(pg, "GET", "/@search?portal_type=Document&metadata_fields=snippet")
        self.assertEqual({item["snippet"] for item in found["items"]}, {None})
        # Volto's search block asks @querystring-search
        body = {
            "query": [{"i": "SearchableText", "o": "plone.app.querystring.operation.string.contains", "v": "river"}],
            "metadata_fields": ["snippet"],
            "sort_on": "relevance",
        }
        status, found = self.request(pg, "POST", "/@querystring-search", body, user="Anonymous")
        self.assertEqual(status, "200 OK", found)
        self.assertGreater(len(found["items"]), 0)
        for item in found["items"]:
            self.assertRegex(item["snippet"], r"<mark>[Rr]iver\w*</mark>", item)

    def found_ids(self, site, query: str, user: str) -> list[str]:
        status, answer = self.request(site, "GET", "/@search?" + query, user=user)
        self.assertEqual(status, "200 OK", answer)
        return [item["@id"] for item in answer["items"]]


class CollectionTest(RestCase):
    def setUp(self):
        super().setUp()
        self.add_collection(
            "recent",
            "Recent pages and events",
            [
                {"i": "portal_type", "o": SELECTION, "v": ["Document", "Event", "Collection"]},
                {"i": "review_state", "o": SELECTION, "v": ["published", "pending"]},
            ],
            sort_on="sortable_title",
            sort_reversed=True,
            limit=12,
        )

    def results(self, site, **kw) -> list[str]:
        setSite(site)
        found = site["recent"].results(batch=False, **kw)
        return [brain.getPath()[len(self.roots[site]) :] for brain in found]

    def test_results(self):
        pg, z = self.sites
        expected = self.results(z)
        self.assertEqual(expected, self.results(pg))
        self.assertEqual(len(expected), 12)
        # the collections of the built tree: all pages, by default order
        for brain in z.portal_catalog(portal_type="Collection", sort_on="path"):
            path = brain.getPath()[len(self.roots[z]) :]
            with self.subTest(path=path):
                setSite(z)
                zfound = [
                    b.getPath()[len(self.roots[z]) :] for b in z.unrestrictedTraverse(path[1:]).results()
                ]
                setSite(pg)
                found = [
                    b.getPath()[len(self.roots[pg]) :] for b in pg.unrestrictedTraverse(path[1:]).results()
                ]
                self.assertEqual(sorted(zfound), sorted(found))

    def test_as_json_and_as_page(self):
        for user in ("Manager", "Anonymous"):
            with self.subTest(user=user):
                status, answer = self.assertSame("GET", "/recent", user=user)
                self.assertEqual(status, "200 OK")
                self.assertTrue(answer["items"])
                (zstatus, zpage), (status, page) = self.both("HTML", "/recent", user=user)
                self.assertEqual((zstatus, status), ("200 OK", "200 OK"))
                listed = [
                    self.listed(site, text)
                    for site, text in zip(reversed(self.sites), (zpage, page), strict=True)
                ]
                self.assertEqual(listed[0], listed[1])
                self.assertTrue(listed[0])

    def listed(self, site, page: str) -> list[str]:
        """The item links of a listing page, relative to the site."""
        core = page[page.index('id="content-core"') :]
        links = re.findall(r'<a href="([^"]+)"\s+class="[^"]*\burl"', core)
        return [link.replace(site.absolute_url(), "") for link in links]
