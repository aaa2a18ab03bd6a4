"""plone.volto beside the catalog, compared with a stock site.

plone.volto's ``catalog.xml`` adds a KeywordIndex ``block_types`` (its
indexer hands back a ``Counter`` of the page's block types, nested blocks
counted) and the metadata columns ``nav_title``, ``head_title``,
``hasPreviewImage``, ``image_field`` and ``block_types``: they must arrive
on our catalog as on ZCatalog and answer the same, through the catalog and
through plone.volto's own ``@blocktypes`` service.

Volto's search block reaches the catalog through plone.restapi's
``@querystring-search``.  The bodies below are modelled on what Volto
sends (plone/volto, ``packages/volto/src``):

- ``components/manage/Blocks/Listing/withQuerystringResults.jsx``: the
  search block hands its state to the listing body, which posts
  ``metadata_fields: "_all"`` (``fullobjects: 1`` for variations that ask),
  ``b_size`` (``settings.defaultPageSize``, 25, unless the block sets one)
  and copies ``query``, ``sort_on``, ``sort_order``, ``limit`` and ``depth``
  when the block has them;
- ``actions/querystringsearch/querystringsearch.js``
  (``getQueryStringResults``): ``depth`` is appended to the ``path``
  criterion's value as ``::<depth>``; a boolean ``sort_order`` becomes
  ``"descending"`` / ``"ascending"``; ``b_start`` is ``b_size * (page - 1)``
  (0 on the first page);
- ``components/manage/Blocks/Search/hocs/withSearch.jsx``: the block's own
  criteria are sent with ``mandatory: true`` on the first load; the search
  box adds ``SearchableText`` / ``string.contains``; facets add their
  criteria (``components/base.js``: ``list.contains`` for a multiple
  choice, ``selection.is`` for a single one; ``DateRangeFacet.jsx``:
  ``date.between`` with two ``YYYY-MM-DD`` dates); a listing without a
  query lists the folder: ``relativePath`` ``::1`` by position.

Each is asked as Anonymous, as a Member (Reader of one folder by a local
role) and as a Manager.
"""

from datetime import date
from datetime import timedelta
from DateTime import DateTime
from helpers import AddonFixture
from pathlib import Path
from plone import api
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.pgcatalog.testing import PGFunctionalTesting
from plone.testing.zope import Browser
from test_restapi import RestCase
from xml.etree import ElementTree
from zope.component.hooks import setSite

import importlib.util
import json
import plone.volto
import transaction


class VoltoFixture(AddonFixture):
    """plone.volto installed on both sites, with Folder and Collection
    addable again (plone.volto hides them; the shared content tree has
    both)."""

    def configure(self, site) -> None:
        for name in ("Folder", "Collection"):
            site.portal_types[name].global_allow = True


VOLTO_FIXTURE = VoltoFixture(("plone.volto",), ("plone.volto:default",), name="plone.pgcatalog:Volto")
VOLTO_TESTING = PGFunctionalTesting(bases=(VOLTO_FIXTURE,), name="plone.pgcatalog:VoltoFunctional")

PAQO = "plone.app.querystring.operation."


def volto_catalog_xml() -> tuple[dict[str, str], tuple[str, ...]]:
    """The indexes (name: meta_type) and metadata columns of the installed
    plone.volto's ``catalog.xml`` (5.x, on Plone 6.1, has no
    ``block_types`` column and no ``@blocktypes`` service)."""
    root = ElementTree.parse(Path(plone.volto.__file__).parent / "profiles/default/catalog.xml").getroot()
    indexes = {index.get("name"): index.get("meta_type") for index in root.iter("index")}
    return indexes, tuple(column.get("value") for column in root.iter("column"))


INDEXES, COLUMNS = volto_catalog_xml()
HAS_BLOCKTYPES_SERVICE = importlib.util.find_spec("plone.volto.services") is not None
MEMBER, MEMBER_PASSWORD = "member", "member-secret-1"
READER_FOLDER = "item-005"
"""The folder the member may read by a local role (private content in it)."""
PAGE_SIZE = 25
"""Volto's ``settings.defaultPageSize``."""


def block(type_: str, **data) -> dict:
    return {"@type": type_, **data}


# Pages with blocks: ids, nav titles and blocks (ids of blocks fixed: the
# same on both sites); a "columns" block holds nested blocks, which
# plone.volto's indexer counts
PAGES = {
    "blocks-text": (
        "Texts",
        {
            "b1": block("title"),
            "b2": block("slate", plaintext="river"),
            "b3": block("slate", plaintext="stone"),
            "b4": block("image"),
        },
    ),
    "blocks-teasers": (
        "",
        {
            "b1": block("title"),
            "b2": block("teaser"),
            "b3": block("__grid", columns=[block("teaser"), block("slate"), block("image")]),
        },
    ),
    "blocks-listing": ("Listing", {"b1": block("title"), "b2": block("listing"), "b3": block("search")}),
    "blocks-none": ("", {}),
}


def add_pages(site) -> None:
    """:data:`PAGES` in *site*, published; effective dates for what is
    published, a day apart in the order of paths (as publishing sets them:
    sorting on them has no ties); a member who may read
    :data:`READER_FOLDER`."""
    setSite(site)
    for page_id, (nav_title, blocks) in PAGES.items():
        page = api.content.create(
            container=site,
            type="Document",
            id=page_id,
            title=f"Page {page_id}",
            nav_title=nav_title or None,
            blocks=blocks,
            blocks_layout={"items": list(blocks)},
        )
        api.content.transition(obj=page, transition="publish")
    catalog = site.portal_catalog
    published = catalog.unrestrictedSearchResults(review_state="published", sort_on="path")
    for n, brain in enumerate(published):
        obj = brain._unrestrictedGetObject()
        if obj.effective_date is None:
            obj.setEffectiveDate(DateTime("2025/01/01 12:00 UTC") + n)
            obj.reindexObject()
    site.acl_users._doAddUser(MEMBER, MEMBER_PASSWORD, ["Member"], [])
    folder = site[READER_FOLDER]
    folder.manage_setLocalRoles(MEMBER, ["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()


def search_block(query, sort_on=None, sort_order=None, b_size=None, page=1, limit=None, depth=None):
    """The body Volto's search block posts to ``@querystring-search``."""
    body = {"metadata_fields": "_all", "b_size": b_size or PAGE_SIZE, "query": [dict(c) for c in query]}
    for key, value in (("sort_on", sort_on), ("sort_order", sort_order), ("limit", limit)):
        if value is not None:
            body[key] = value
    if isinstance(body.get("sort_order"), bool):
        body["sort_order"] = "descending" if body["sort_order"] else "ascending"
    if depth is not None:
        for criterion in body["query"]:
            if criterion["i"] == "path":
                criterion["v"] += f"::{depth}"
    body["b_start"] = body["b_size"] * (page - 1)
    return body


class VoltoCase(RestCase):
    """Both sites built (:func:`helpers.build_content`, :data:`PAGES`),
    searched through Zope's publisher as Anonymous, a Member or a Manager."""

    layer = VOLTO_TESTING

    def setUp(self):
        super().setUp()
        for site in self.sites:
            add_pages(site)
            brains = site.portal_catalog.unrestrictedSearchResults(path=self.roots[site])
            self.uids[site] = {b.UID: b.getPath()[len(self.roots[site]) :] for b in brains}

    def normalized(self, site, value):
        """The same, the site's id too (the site root is a result)."""
        if value == site.getId():
            return "<site id>"
        return super().normalized(site, value)

    def request(self, site, method: str, path: str, body=None, user="Manager"):
        """(status, normalized JSON) of a REST request as *user*."""
        browser = Browser(self.layer["app"])
        browser.handleErrors = True
        browser.raiseHttpErrors = False
        if user == "Manager":
            browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        elif user == "Member":
            browser.addHeader("Authorization", f"Basic {MEMBER}:{MEMBER_PASSWORD}")
        browser.addHeader("Accept", "application/json")
        url = site.absolute_url() + path
        if method == "GET":
            browser.open(url)
        else:
            browser.post(url, json.dumps(body), "application/json")
        return browser.headers["status"], self.normalized(site, json.loads(browser.contents))


class BlockTypesTest(VoltoCase):
    def test_registered_as_on_stock(self):
        ours, stock = (site.portal_catalog for site in self.sites)
        self.assertEqual(INDEXES, {"block_types": "KeywordIndex"})
        self.assertTrue(COLUMNS)
        for name, meta_type in INDEXES.items():
            self.assertEqual(ours._catalog.getIndex(name).meta_type, meta_type)
            self.assertEqual(stock._catalog.getIndex(name).meta_type, meta_type)
        self.assertEqual(sorted(ours.indexes()), sorted(stock.indexes()))
        self.assertEqual(sorted(ours.schema()), sorted(stock.schema()))
        self.assertLessEqual(set(COLUMNS), set(ours.schema()))

    def test_objects_of_brains_on_the_request(self):
        """A brain of a catalog looked up as a utility (no ``REQUEST`` to
        acquire: CMFCore's ``reindexObjectSecurity``) opens its object on
        the current request, as ZCatalog's do: a Link's ``getRemoteUrl``
        indexer traverses to a view, and its metadata must not go missing."""
        for site in self.sites:
            setSite(site)
            catalog = site[READER_FOLDER]._getCatalogTool()
            brain = catalog._unrestrictedSearchResults(portal_type="Link", path=self.roots[site] + "/item-005")[0]
            for obj in (brain._unrestrictedGetObject(), brain.getObject()):
                self.assertIsNotNone(getattr(obj, "REQUEST", None), site)
        links = [
            [(b.getPath()[len(self.roots[site]) :], b.getRemoteUrl) for b in site.portal_catalog(portal_type="Link", sort_on="path")]
            for site in self.sites
        ]
        self.assertEqual(links[0], links[1])
        self.assertIn(("/item-005/item-006/item-011", "https://example.org/11"), links[1])

    def answers(self, site) -> dict:
        setSite(site)
        catalog = site.portal_catalog
        prefix = len(self.roots[site])

        def paths(**query):
            found = catalog.unrestrictedSearchResults(sort_on="path", **query)
            return [brain.getPath()[prefix:] for brain in found]

        def columns(brain) -> dict:
            values = {name: getattr(brain, name) for name in COLUMNS}
            if isinstance(values.get("block_types"), dict):  # a Counter on ZCatalog
                values["block_types"] = dict(values["block_types"])
            return values

        return {
            "values": sorted(catalog.uniqueValuesFor("block_types")),
            "slate": paths(block_types="slate"),
            "teaser or listing": paths(block_types=["teaser", "listing"]),
            "teaser and image": paths(block_types={"query": ["teaser", "image"], "operator": "and"}),
            "slate and title": paths(block_types={"query": ["slate", "title"], "operator": "and"}),
            "not slate": paths(portal_type="Document", block_types={"not": "slate"}),
            "not slate, no list": paths(block_types={"query": "title", "not": ["slate", "search"]}),
            "pages per type": {value: len(catalog(block_types=value)) for value in catalog.uniqueValuesFor("block_types")},
            "columns": {
                brain.getPath()[prefix:]: columns(brain)
                for brain in catalog.unrestrictedSearchResults(
                    portal_type=["Document", "Image", "Folder"], sort_on="path"
                )
            },
        }

    def test_searched_as_on_stock(self):
        ours, stock = (self.answers(site) for site in self.sites)
        self.assertEqual(stock["values"], ["__grid", "image", "listing", "search", "slate", "teaser", "title"])
        self.assertEqual(stock["slate"], ["/blocks-teasers", "/blocks-text"])
        self.assertEqual(stock["teaser and image"], ["/blocks-teasers"])
        self.assertIn("/blocks-none", stock["not slate"])
        self.assertEqual(stock["not slate, no list"], [])
        self.assertEqual(
            stock["pages per type"], {"__grid": 1, "image": 2, "listing": 1, "search": 1, "slate": 2, "teaser": 1, "title": 3}
        )
        if "block_types" in COLUMNS:
            self.assertEqual(
                stock["columns"]["/blocks-teasers"]["block_types"],
                {"title": 1, "teaser": 2, "slate": 1, "image": 1, "__grid": 1},
            )
        self.assertEqual(stock["columns"]["/blocks-text"]["nav_title"], "Texts")
        self.assertIn("image", [c["image_field"] for c in stock["columns"].values()])
        self.assertEqual(ours, stock)

    def test_blocktypes_service(self):
        """plone.volto's ``@blocktypes`` (where it has one): counts summed
        over the brains' ``block_types`` metadata."""
        for path in ("/@blocktypes", "/@blocktypes/slate", "/@blocktypes/teaser"):
            with self.subTest(path=path):
                (zstatus, expected), (status, got) = self.both("GET", path)
                self.assertEqual(zstatus, status)
                if isinstance(expected, list):
                    for answer in (expected, got):
                        answer.sort(key=lambda item: item["@id"])
                self.assertEqual(expected, got)
                self.assertEqual(status, "200 OK" if HAS_BLOCKTYPES_SERVICE else "404 Not Found")
                self.assertTrue(expected)
        if HAS_BLOCKTYPES_SERVICE:
            # the nested blocks of a "columns" block count where a request
            # visits them (plone.volto's visitor adapts the request)
            _, totals = self.both("GET", "/@blocktypes")[1]
            self.assertEqual(totals["slate"], 3)
            self.assertEqual(totals["teaser"], 2)


class SearchBlockTest(VoltoCase):
    def bodies(self) -> dict:
        today = date.today()
        news = [
            {"i": "portal_type", "o": PAQO + "selection.any", "v": ["News Item", "Document"], "mandatory": True},
            {"i": "review_state", "o": PAQO + "selection.any", "v": ["published"], "mandatory": True},
        ]
        return {
            "news by effective": search_block(news, sort_on="effective", sort_order=True),
            "news by effective, ascending": search_block(news, sort_on="effective", sort_order=False),
            "all by title": search_block(
                [{"i": "path", "o": PAQO + "string.absolutePath", "v": "/", "mandatory": True}],
                sort_on="sortable_title",
                sort_order="ascending",
            ),
            "all by title, page 2": search_block(
                [{"i": "path", "o": PAQO + "string.absolutePath", "v": "/"}], sort_on="sortable_title", page=2
            ),
            "all by title, page 3 of 10": search_block(
                [{"i": "path", "o": PAQO + "string.absolutePath", "v": "/"}],
                sort_on="sortable_title",
                sort_order="descending",
                b_size=10,
                page=3,
            ),
            "facet types": search_block(
                [
                    {"i": "path", "o": PAQO + "string.absolutePath", "v": "/"},
                    {"i": "portal_type", "o": PAQO + "list.contains", "v": ["Event", "Folder", "Document"]},
                ],
                sort_on="sortable_title",
            ),
            "facet subject, any": search_block(
                [{"i": "Subject", "o": PAQO + "selection.any", "v": ["alpha", "Ümlaut"]}],
                sort_on="sortable_title",
            ),
            "facet subject, all": search_block(
                [{"i": "Subject", "o": PAQO + "selection.all", "v": ["alpha", "beta"]}],
                sort_on="sortable_title",
            ),
            "facet subject, single": search_block(
                [
                    {"i": "portal_type", "o": PAQO + "selection.any", "v": ["Document", "News Item", "Event"]},
                    {"i": "Subject", "o": PAQO + "selection.is", "v": "news"},
                ],
                sort_on="sortable_title",
                sort_order="descending",
            ),
            "search box": search_block(
                [
                    {"i": "path", "o": PAQO + "string.absolutePath", "v": "/"},
                    {"i": "SearchableText", "o": PAQO + "string.contains", "v": "river"},
                ],
                sort_on="sortable_title",
            ),
            "search box, by relevance": search_block(
                [{"i": "SearchableText", "o": PAQO + "string.contains", "v": "stone"}]
            ),
            "search box, prefix": search_block(
                [
                    {"i": "portal_type", "o": PAQO + "selection.any", "v": ["Document", "News Item", "Event", "Folder"]},
                    {"i": "SearchableText", "o": PAQO + "string.contains", "v": "lante"},
                ],
                sort_on="sortable_title",
            ),
            "events in a date range": search_block(
                [
                    {"i": "portal_type", "o": PAQO + "selection.any", "v": ["Event"], "mandatory": True},
                    {
                        "i": "start",
                        "o": PAQO + "date.between",
                        "v": [(today - timedelta(days=10)).isoformat(), (today + timedelta(days=10)).isoformat()],
                    },
                ],
                sort_on="start",
                sort_order="ascending",
            ),
            "upcoming events, limited": search_block(
                [
                    {"i": "portal_type", "o": PAQO + "selection.any", "v": ["Event"]},
                    {"i": "end", "o": PAQO + "date.afterToday", "v": ""},
                ],
                sort_on="start",
                limit=4,
            ),
            "subtree, depth 1": search_block(
                [{"i": "path", "o": PAQO + "string.absolutePath", "v": f"/{READER_FOLDER}"}],
                sort_on="getObjPositionInParent",
                depth=1,
            ),
            "subtree, depth 2": search_block(
                [
                    {"i": "path", "o": PAQO + "string.absolutePath", "v": f"/{READER_FOLDER}"},
                    {"i": "review_state", "o": PAQO + "selection.any", "v": ["private", "published", "pending"]},
                ],
                sort_on="sortable_title",
                depth=2,
            ),
            "blocks": search_block(
                [{"i": "block_types", "o": PAQO + "selection.any", "v": ["teaser", "listing"]}],
                sort_on="sortable_title",
            ),
        }

    def test_search_block(self):
        counts = {}
        for user in ("Anonymous", "Member", "Manager"):
            for label, body in self.bodies().items():
                with self.subTest(user=user, search=label):
                    expected, (status, answer) = self.both("POST", "/@querystring-search", body, user)
                    # the block asks for metadata_fields=_all, which brings
                    # snippets (marked words of a text search; null on ZCatalog)
                    snippets = [item.pop("snippet", None) for item in answer["items"]]
                    self.assertEqual({item.pop("snippet", None) for item in expected[1]["items"]} - {None}, set())
                    self.assertEqual(expected, (status, answer), f"{label} as {user}")
                    texts = any(criterion["i"] == "SearchableText" for criterion in body["query"])
                    texts = texts and not body.get("fullobjects")
                    for snippet in snippets:
                        self.assertTrue("<mark>" in snippet if texts else snippet is None, (label, snippet))
                    self.assertEqual(status, "200 OK")
                    counts[user, label] = answer["items_total"]
                    total = min(answer["items_total"], body.get("limit") or answer["items_total"])
                    shown = max(0, min(body["b_size"], total - body["b_start"]))
                    self.assertEqual(len(answer["items"]), shown, answer)
        # the member reads more than Anonymous (the folder's private
        # content), less than a Manager; more than one page for a Manager
        self.assertGreater(counts["Member", "subtree, depth 2"], counts["Anonymous", "subtree, depth 2"])
        self.assertGreater(counts["Manager", "all by title"], counts["Member", "all by title"])
        self.assertGreater(counts["Manager", "all by title"], PAGE_SIZE)  # page 2 is not empty
        self.assertEqual(counts["Manager", "blocks"], 2)

    def test_folder_listing(self):
        """A listing without a query in a folder: its children by position,
        the folder itself left out (``UID`` not)."""
        body = search_block(
            [{"i": "path", "o": PAQO + "string.relativePath", "v": "::1"}], sort_on="getObjPositionInParent"
        )
        for user in ("Anonymous", "Member", "Manager"):
            with self.subTest(user=user):
                status, answer = self.assertSame("POST", f"/{READER_FOLDER}/@querystring-search", body, user)
                self.assertEqual(status, "200 OK")
                self.assertTrue(answer["items"])
                self.assertNotIn(f"<site>/{READER_FOLDER}", [item["@id"] for item in answer["items"]])



