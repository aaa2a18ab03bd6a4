"""What the catalog publishes: its URLs as Anonymous and as a Member,
through Zope's publisher, on our site and on a stock ZCatalog site.

Each site gets a private folder holding a private page (a word, a title,
an id, a UID and a local role of its own) and a published page.  Every
public name of the tool's class, of each index object's class and of each
lexicon's class is requested with the argument shapes its signature takes;
so are the views that search.  No answer of ours may hold a marker of the
private page (markers the request itself carries excepted: pages echo
what they were asked), none may be a server error, and every name ours
publishes to a role the stock site publishes to it too.
"""

from helpers import BothSitesTestCase
from hypothesis import example
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from plone import api
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.pgcatalog.errors import CatalogUnavailable
from plone.pgcatalog.errors import SearchTimeout
from plone.pgcatalog.tool import PGCatalogTool
from plone.testing.zope import Browser
from plone.uuid.interfaces import IMutableUUID
from Acquisition import aq_base
from unittest import mock
from urllib.parse import quote
from urllib.parse import unquote
from urllib.parse import urlencode
from zope.component.hooks import setSite

import gzip
import inspect
import json
import os
import psycopg
import transaction


PRIVATE_UID = "5ec12e7a0c0ffee0ddba11de1ec7ab1e"
# what tells the private page: its body word, its title's word, its id, its
# UID, the user holding a local role on it, its folder's id
MARKERS = ("zanzibarquux", "quillwort", "hidden-zq-page", PRIVATE_UID, "secretowner", "vault-folder")
MEMBER = ("webmember", "member-secret-1")
SEARCH_PARAMETERS = ("query", "query_request", "REQUEST", "kw")


def build(site) -> None:
    """The private and the published content, committed."""
    setSite(site)
    wf = site.portal_workflow
    wf.setChainForPortalTypes(("Document", "Folder"), "simple_publication_workflow")
    api.user.create(email="w@example.org", username=MEMBER[0], password=MEMBER[1], roles=["Member"])
    api.user.create(
        email="s@example.org", username="secretowner", password="secret-owner-1", roles=["Member"]
    )
    vault = api.content.create(container=site, type="Folder", id="vault-folder", title="Vault")
    page = api.content.create(
        container=vault,
        type="Document",
        id="hidden-zq-page",
        title="Quillwort plans",
        description="Nothing to see",
        text="<p>The zanzibarquux formula</p>",
    )
    IMutableUUID(page).set(PRIVATE_UID)
    api.user.grant_roles(username="secretowner", obj=page, roles=["Reader"])
    page.reindexObject()
    page.reindexObjectSecurity()
    open_page = api.content.create(
        container=site, type="Document", id="open-page", title="Open notes", text="<p>harmless words</p>"
    )
    api.content.transition(obj=open_page, transition="publish")
    api.portal.set_registry_record("plone.enable_sitemap", True)
    transaction.commit()


def shapes(func, rid: int, path: str, indexes: list[str]) -> list[dict]:
    """The query strings to call *func* with, from its signature: none,
    and each parameter it takes in the shapes a caller would send."""
    try:
        params = set(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        params = set()
    found = [{}]
    if "rid" in params:
        found += [{"rid:int": rid}, {"rid": rid}]
    if "documentId" in params:
        found += [{"documentId:int": rid}, {"documentId": rid}]
    if "uid" in params:
        found.append({"uid": path})
    if "path" in params:
        found.append({"path": path})
    if "name" in params:
        found += [{"name": name} for name in indexes]
    if params & set(SEARCH_PARAMETERS):
        found += [
            {"SearchableText": "zanzibarquux"},
            {"UID": PRIVATE_UID},
            {"path": path},
            {"getId": path.split("/")[-1]},
        ]
    return found


def leaked(answer: str, request: str) -> list[str]:
    """The private page's markers in *answer* that *request* did not carry."""
    answer, request = answer.lower(), request.lower()
    return [m for m in MARKERS if m.lower() in answer and m.lower() not in request]


def open_browser(app, role: str, handle_errors: bool = True) -> Browser:
    """A browser through Zope's publisher, logged in as *role* (Anonymous,
    Member or Manager), reporting redirects and errors as they come."""
    browser = Browser(app)
    browser.handleErrors = handle_errors
    browser.raiseHttpErrors = False
    browser.followRedirects = False
    if role == "Member":
        browser.addHeader("Authorization", "Basic {}:{}".format(*MEMBER))
    elif role == "Manager":
        browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
    return browser


def names_of(cls) -> list[str]:
    """The names a URL may end with on an instance of *cls*."""
    return sorted(name for name in dir(cls) if not name.startswith("_"))


class WebSurfaceTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        for site in self.sites:
            build(site)
            login(self.layer["app"], SITE_OWNER_NAME)
        self.pg, self.z = self.sites
        self.assertIsInstance(aq_base(self.pg.portal_catalog), PGCatalogTool)

    def browser(self, role: str) -> Browser:
        return open_browser(self.layer["app"], role)

    def get(self, browser: Browser, url: str, data: str | None = None) -> tuple[int, str]:
        if data is None:
            browser.open(url)
        else:
            browser.post(url, data, "application/json")
        body = browser._response.body
        if browser.headers.get("Content-Encoding") == "gzip" or url.endswith(".gz"):
            body = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
        return int(browser.headers["status"].split()[0]), body.decode("utf-8", "replace")

    def catalog_urls(self, site) -> list[tuple[str, str]]:
        """``(name, url)`` of every public name of the tool, its index
        objects and its lexicons, called in every shape it takes."""
        catalog = site.portal_catalog
        base = catalog.absolute_url()
        path = "/".join(site.getPhysicalPath()) + "/vault-folder/hidden-zq-page"
        rid = catalog.getrid(path)
        self.assertIsNotNone(rid)
        indexes = list(catalog.indexes())
        targets = [("", type(aq_base(catalog)))]
        # one index of each class: the names and shapes come from the class
        classes = {}
        for name in indexes:
            classes.setdefault(type(aq_base(catalog.Indexes[name])), name)
        targets += [(f"Indexes/{name}/", cls) for cls, name in classes.items()]
        targets += [(f"{obj.getId()}/", type(aq_base(obj))) for obj in catalog.objectValues()]
        urls = [("portal_catalog", base), ("Indexes", base + "/Indexes")]
        urls += [(f"Indexes/{name}", f"{base}/Indexes/{name}") for name in indexes]
        for prefix, cls in targets:
            for name in names_of(cls):
                func = getattr(cls, name, None)
                for shape in shapes(func, rid, path, indexes) if callable(func) else [{}]:
                    query = urlencode(shape, quote_via=quote)
                    urls.append((prefix + name, f"{base}/{prefix}{name}" + (f"?{query}" if query else "")))
        return urls

    def test_catalog_urls_publish_nothing_private(self):
        published = set()
        for role in ("Anonymous", "Member"):
            browser = self.browser(role)
            for name, url in self.catalog_urls(self.pg):
                status, answer = self.get(browser, url)
                with self.subTest(role=role, url=url):
                    self.assertLess(status, 500, answer[:2000])
                    self.assertEqual(leaked(answer, url), [], answer[:2000])
                if status == 200:
                    published.add((role, name))
        # at most what stock Plone publishes to that role
        stock = {}
        for role in ("Anonymous", "Member"):
            browser = self.browser(role)
            for name, url in self.catalog_urls(self.z):
                if (role, name) in published and stock.get((role, name)) != 200:
                    stock[role, name] = self.get(browser, url)[0]
        self.maxDiff = None
        self.assertEqual(sorted((p, stock.get(p)) for p in published if stock.get(p) != 200), [])
        # the search API is off the web for everybody, as on a stock site
        browser = self.browser("Manager")
        for name in (
            "searchResults",
            "getIndexDataForRID",
            "getMetadataForRID",
            "searchAll",
            "uniqueValuesFor",
            "facetCounts",
            "suggestions",
        ):
            for site in self.sites:
                status, _ = self.get(
                    browser, f"{site.portal_catalog.absolute_url()}/{name}?rid:int=1&name=Title"
                )
                self.assertEqual(status, 404, (site.getId(), name))

    def view_requests(self, site) -> list[tuple[str, str | None]]:
        """``(url, JSON body or None)`` of the views that search."""
        url = site.absolute_url()
        criteria = [
            {
                "i": "SearchableText",
                "o": "plone.app.querystring.operation.string.contains",
                "v": "zanzibarquux",
            }
        ]
        every_page = [
            {"i": "portal_type", "o": "plone.app.querystring.operation.selection.any", "v": ["Document"]}
        ]
        vocabulary = quote(json.dumps({"criteria": every_page}))
        attributes = urlencode({"attributes": json.dumps(["UID", "Title", "path", "getId"])})
        return [
            (f"{url}/@search?SearchableText=zanzibarquux", None),
            (f"{url}/@search?SearchableText=quillwort&metadata_fields=_all", None),
            (f"{url}/@search?UID={PRIVATE_UID}", None),
            (f"{url}/@search?portal_type=Document&fullobjects=1&metadata_fields=_all", None),
            (f"{url}/@search?path.query={quote('/'.join(site.getPhysicalPath()))}/vault-folder", None),
            (f"{url}/@querystring-search", json.dumps({"query": criteria})),
            (f"{url}/@querystring-search", json.dumps({"query": every_page, "metadata_fields": "_all"})),
            (f"{url}/@navigation?expand.navigation.depth=4", None),
            # the catalog's additions (a stock site has none of them: 404)
            (f"{url}/@search?SearchableText=quillwort&metadata_fields=snippet", None),
            (f"{url}/@search?SearchableText=plans&metadata_fields=snippet&metadata_fields=Title", None),
            (f"{url}/@suggestions?SearchableText=zanzibarqux", None),
            (f"{url}/@suggestions?SearchableText=quilwort+plans", None),
            (f"{url}/@facet-count", json.dumps({"facets": ["getId", "Title", "UID", "Creator"]})),
            (f"{url}/@facet-count", json.dumps({"facet": "getId", "query": criteria})),
            (f"{url}/@@search?SearchableText=quilwort", None),
            (f"{url}/@vocabularies/plone.app.vocabularies.Catalog?title=quillwort", None),
            (f"{url}/@vocabularies/plone.app.vocabularies.Catalog", None),
            (f"{url}/@@search?SearchableText=zanzibarquux", None),
            (f"{url}/@@search?SearchableText=quillwort&sort_on=sortable_title", None),
            (f"{url}/@@search?portal_type:list=Document", None),
            (f"{url}/@@ajax-search?SearchableText=quillwort", None),
            (f"{url}/@@ajax-search?SearchableText=zanzibarquux", None),
            (f"{url}/@@sitemap", None),
            (f"{url}/sitemap.xml.gz", None),
            # as the related items widget asks (without attributes Plone
            # itself fails, on a stock site too)
            (
                f"{url}/@@getVocabulary?name=plone.app.vocabularies.Catalog&query={vocabulary}&{attributes}",
                None,
            ),
            (f"{url}/@@getVocabulary?name=plone.app.vocabularies.Keywords", None),
            (f"{url}/vault-folder/hidden-zq-page", None),
        ]

    def test_search_views_show_nothing_private(self):
        for site in self.sites:
            for role in ("Anonymous", "Member"):
                browser = self.browser(role)
                for url, body in self.view_requests(site):
                    browser.addHeader(
                        "Accept", "application/json" if "/@" in url and "@@" not in url else "text/html"
                    )
                    status, answer = self.get(browser, url, body)
                    with self.subTest(site=site.getId(), role=role, url=url):
                        if site is self.pg:
                            self.assertLess(status, 500, answer[:2000])
                        self.assertEqual(leaked(answer, url + (body or "")), [], answer[:2000])

    def test_markers_show_to_those_allowed(self):
        """The markers are real: a Manager's searches and the local
        Reader's find the private page through the same views."""
        for site in self.sites:
            url = site.absolute_url()
            browser = self.browser("Manager")
            _, answer = self.get(browser, f"{url}/@@search?SearchableText=zanzibarquux")
            self.assertIn("hidden-zq-page", answer)
            browser.addHeader("Accept", "application/json")
            _, answer = self.get(browser, f"{url}/@search?UID={PRIVATE_UID}&metadata_fields=Title")
            self.assertIn("Quillwort", answer)
            reader = self.browser("Anonymous")
            reader.addHeader("Authorization", "Basic secretowner:secret-owner-1")
            reader.addHeader("Accept", "application/json")
            _, answer = self.get(reader, f"{url}/@search?SearchableText=quillwort")
            self.assertIn("hidden-zq-page", answer, site.getId())
        # and through the catalog's additions (our site only)
        url = self.pg.absolute_url()
        for role in ("Manager", "Reader"):
            browser = self.browser("Manager")
            if role == "Reader":
                browser = self.browser("Anonymous")
                browser.addHeader("Authorization", "Basic secretowner:secret-owner-1")
            browser.addHeader("Accept", "application/json")
            _, answer = self.get(browser, f"{url}/@suggestions?SearchableText=quilwort")
            self.assertIn("quillwort", answer, role)
            _, answer = self.get(browser, f"{url}/@facet-count", json.dumps({"facets": ["getId"]}))
            self.assertIn("hidden-zq-page", answer, role)
            _, answer = self.get(browser, f"{url}/@search?SearchableText=plans&metadata_fields=snippet")
            self.assertIn("quillwort", json.loads(answer)["items"][0]["snippet"].lower(), role)


# -- hostile query strings ------------------------------------------------------

KEYS = (
    "SearchableText",
    "Title",
    "Description",
    "path",
    "portal_type",
    "UID",
    "getId",
    "Subject",
    "review_state",
    "created",
    "effective",
    "getObjPositionInParent",
    "is_folderish",
    "allowedRolesAndUsers",
    "effectiveRange",
    "sort_on",
    "sort_order",
    "sort_limit",
    "b_start",
    "b_size",
    "show_inactive",
    "metadata_fields",
    "fullobjects",
    "use_site_search_settings",
    "Subject_operator",
    "path.query",
    "path.depth",
    "created.query",
    "created.range",
)
CONVERTERS = (
    "",
    "",
    ":list",
    ":int",
    ":long",
    ":float",
    ":boolean",
    ":record",
    ":record:list",
    ":tuple",
    ":date",
    ":lines",
    ":tokens",
)
VALUES = (
    "zanzibarquux",
    "quillwort*",
    PRIVATE_UID,
    "/plone/vault-folder",
    "/plone/vault-folder/hidden-zq-page",
    "Document",
    "private",
    "Anonymous",
    "Manager",
    "True",
    "-1",
    "99999999999999999999999",
    "1.5",
    "2020-01-01",
    "min:max",
    "reverse",
    "*",
    '"',
    "(",
    "NOT",
    "a OR b",
    "",
    "%00",
    "%ff%fe",
    "%c0%af",
)


def _value(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:  # long: many words, globs or operators
        word = draw(st.sampled_from(("w", "w*", "alpha", "OR", "(", "zanzibarquux")))
        return quote(" ".join([word] * draw(st.sampled_from((50, 600, 3000)))))
    if kind < 3:
        return quote(draw(st.text(max_size=30)))
    value = draw(st.sampled_from(VALUES))
    return value if value.startswith("%") else quote(value)


def query_strings():
    """Query strings as a hostile client writes them: ZPublisher's
    converters, records, repeated keys (lists of thousands), long values,
    bytes that are no UTF-8."""

    @st.composite
    def build_query(draw):
        parts = []
        for _ in range(draw(st.integers(1, 5))):
            key = draw(st.sampled_from(KEYS)) + draw(st.sampled_from(CONVERTERS))
            repeat = draw(st.sampled_from((1, 1, 1, 2, 10, 600, 10_000)))
            if repeat > 1:
                key = key.replace(":list", "") + ":list"
                parts += [f"{key}={quote(f'w{i}')}" for i in range(repeat)]
            else:
                parts.append(f"{key}={_value(draw)}")
        return "&".join(parts)

    return build_query()


def database_error(exc: BaseException | None) -> BaseException | None:
    """*exc* or what it was raised from, if that is the database's."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (psycopg.Error, SearchTimeout, CatalogUnavailable)):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


class HostileQueriesTest(BothSitesTestCase):
    """Generated query strings to the pages that search, as Anonymous:
    never a database error (nor a search past the statement timeout),
    nothing private in the answer.  ``PGCATALOG_FUZZ_EXAMPLES`` sets how
    many (fixed ones by default, as test_fuzz)."""

    def setUp(self):
        super().setUp()
        self.pg = self.sites[0]
        build(self.pg)

    def test_hostile_query_strings(self):
        examples = int(os.environ.get("PGCATALOG_FUZZ_EXAMPLES", "60"))
        base = self.pg.absolute_url()
        # Plone's own failures raise: we see what they are
        browser = open_browser(self.layer["app"], "Anonymous", handle_errors=False)

        @settings(
            max_examples=examples,
            derandomize="PGCATALOG_FUZZ_EXAMPLES" not in os.environ,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(query_strings())
        # the issue's own: 10,000 words of a list, a boolean sort limit
        @example("&".join(f"SearchableText:list=w{i}" for i in range(10_000)))
        @example("&".join(f"Title:list=w{i}*" for i in range(2_000)))
        @example("sort_limit:boolean=True&sort_on=sortable_title&portal_type=Document")
        @example("SearchableText=" + quote(" ".join(f"w{i}" for i in range(3_000))))
        def check(query):
            for page, accept in (
                ("@@search", "text/html"),
                ("@search", "application/json"),
                ("portal_catalog/searchResults", "text/html"),
            ):
                url = f"{base}/{page}?{query}"
                browser.addHeader("Accept", accept)
                try:
                    browser.open(url)
                    answer = browser._response.body.decode("utf-8", "replace")
                except Exception as exc:  # Plone's or Zope's answer to bad input
                    cause = database_error(exc)
                    if cause is not None:
                        raise AssertionError(f"{page}?{query[:300]}: {cause!r}") from exc
                    answer = str(exc)
                finally:
                    transaction.abort()
                self.assertEqual(leaked(answer, url + unquote(query)), [], f"{page}?{query[:300]}")

        # a stall shows as a search PostgreSQL cancels, which the check
        # takes for the database error it is: a limit well below the default
        with mock.patch.dict(os.environ, {"PGCATALOG_STATEMENT_TIMEOUT": "1000"}):
            check()
