"""The product as its users meet it: a Zope started from a zope.conf on an
empty database, driven over HTTP only.

One Zope serves two Plone sites made through ``@@plone-addsite``: ``Plone``,
where plone.pgcatalog is activated in the Add-ons panel, and ``stock``,
which keeps ZCatalog.  Every step (content made, edited, published, moved,
reordered and deleted through the REST API and the classic forms) is done
on both, and every search (``@search``, ``@querystring-search``,
``@@search``, folder contents) must answer the same on both, as Anonymous,
as a Member and as the admin.  The server is restarted between steps; the
add-on is deactivated and activated again.  Nothing here builds the
schema beforehand: the database is empty until Zope starts on it.

The first run of ``./scripts/demo`` from an empty ``var/``, as a user
starts it, is here too.
"""

from bs4 import BeautifulSoup
from pathlib import Path
from plone.pgcatalog.testing import create_database
from plone.pgcatalog.testing import drop_database
from plone.pgcatalog.testing import PG_SERVER
from zopeserver import ADMIN
from zopeserver import free_port
from zopeserver import ZopeServer

import json
import os
import psycopg
import re
import requests
import shutil
import signal
import subprocess
import tempfile
import time
import unittest


SITES = ("Plone", "stock")
MEMBER = ("member", "member-secret-42")
REPO = Path(__file__).resolve().parents[1]


class Client:
    """One user's HTTP session with one site of the server."""

    def __init__(self, server: ZopeServer, site: str, auth: tuple[str, str] | None) -> None:
        self.root = f"{server.url}/{site}"
        self.site = site
        self.http = requests.Session()
        self.http.auth = auth

    def rest(self, method: str, path: str = "", payload: dict | None = None, **params) -> dict:
        response = self.http.request(
            method,
            self.url(path),
            json=payload,
            params=params or None,
            headers={"Accept": "application/json", "Content-Type": "application/json"},
        )
        if response.status_code >= 400:
            raise AssertionError(
                f"{method} {path} on {self.site}: {response.status_code} {response.text[:2000]}"
            )
        return response.json() if response.content else {}

    def url(self, path: str) -> str:
        return f"{self.root}/{path}" if path else self.root

    def local(self, url: str) -> str:
        """*url* or a physical path, relative to the site."""
        for prefix in (self.root, f"/{self.site}"):
            if url == prefix or url.startswith(prefix + "/"):
                return url[len(prefix) :] or "/"
        return url

    def content_path(self, url: str) -> str:
        """The path in the site of the item an add form went on to."""
        path = self.local(url.split("?")[0]).strip("/")
        return path.removesuffix("/view")

    def page(self, path: str, **params) -> BeautifulSoup:
        response = self.http.get(self.url(path), params=params or None)
        if response.status_code >= 400:
            raise AssertionError(f"GET {path} on {self.site}: {response.status_code}")
        return BeautifulSoup(response.text, "html.parser")

    def submit(self, path: str, button: str, fields: dict | None = None) -> str:
        """Fill the form of the page at *path* (all it holds, as a browser
        sends it, with *fields* changed) and press *button*; the final URL."""
        soup = self.page(path)
        forms = [f for f in soup.find_all("form") if f.find(attrs={"name": button})]
        if not forms:
            raise AssertionError(f"no form with {button} at {path} on {self.site}")
        form = forms[0]
        data = []
        for field in form.find_all(["input", "textarea", "select"]):
            name = field.get("name")
            kind = field.get("type", "text")
            if not name or kind in ("submit", "button", "file", "image"):
                continue
            if kind in ("checkbox", "radio") and not field.has_attr("checked"):
                continue
            if field.name == "select":
                chosen = field.find_all("option", selected=True)
                data.extend((name, option.get("value", option.text)) for option in chosen)
            else:
                data.append((name, field.text if field.name == "textarea" else field.get("value", "")))
        for name, value in (fields or {}).items():
            data = [(n, v) for n, v in data if n != name] + [(name, value)]
        data.append((button, form.find(attrs={"name": button}).get("value", "")))
        action = form.get("action") or self.url(path)
        response = self.http.post(requests.compat.urljoin(self.url(path), action), data=data)
        if response.status_code >= 400:
            raise AssertionError(
                f"POST {action} on {self.site}: {response.status_code} {response.text[:2000]}"
            )
        return response.url


class SiteLifeTest(unittest.TestCase):
    """From an empty database to a site that was installed, used,
    uninstalled and installed again, restarted in between."""

    layer = PG_SERVER

    def setUp(self):
        self.dbname, self.dsn = create_database(self.layer["pg_server_dsn"])
        self.home = Path(tempfile.mkdtemp(prefix="pgcatalog-zope-"))
        self.server = ZopeServer(self.home, self.dsn)
        self.server.add_admin()
        self.server.start()

    def tearDown(self):
        self.server.stop()
        drop_database(self.layer["pg_server_dsn"], self.dbname)
        shutil.rmtree(self.home, ignore_errors=True)

    def clients(self, auth) -> dict[str, Client]:
        return {site: Client(self.server, site, auth) for site in SITES}

    def both(self, step, auth=ADMIN) -> list:
        """*step* done on each site by the user *auth*; its answers."""
        return [step(client) for client in self.clients(auth).values()]

    def same(self, label: str, ask, users=(None, MEMBER, ADMIN)) -> None:
        """*ask* answers the same on both sites, for each of *users*."""
        for auth in users:
            ours, stock = self.both(ask, auth)
            self.assertEqual(ours, stock, f"{label} as {auth[0] if auth else 'Anonymous'}")

    def catalog_rows(self) -> int | None:
        """The database's catalog rows of ``Plone``; None without the columns."""
        with psycopg.connect(self.dsn) as conn:
            if not conn.execute("SELECT to_regclass('pgcatalog_counter') IS NOT NULL").fetchone()[0]:
                return None
            return conn.execute(
                "SELECT count(*) FROM object_state WHERE idx IS NOT NULL AND starts_with(path || '/', '/Plone/')"
            ).fetchone()[0]

    def no_errors(self) -> None:
        # PlonePAS's CleanupTemp loads a tool after its connection closed,
        # whenever a site is made (stock Plone: not ours)
        known = ("Shouldn't load state for Products.PlonePAS.tools.groupdata.GroupDataTool",)
        self.assertEqual(self.server.errors(known), [], "errors in the Zope log")

    # -- the steps ---------------------------------------------------------

    def add_sites(self) -> None:
        admin = requests.Session()
        admin.auth = ADMIN
        for site in SITES:
            soup = BeautifulSoup(admin.get(self.server.url + "/@@plone-addsite").text, "html.parser")
            token = soup.find("input", attrs={"name": "_authenticator"})
            data = {"form.submitted": "1", "site_id": site, "title": "A site"}
            if token is not None:
                data["_authenticator"] = token["value"]
            response = admin.post(self.server.url + "/@@plone-addsite", data=data)
            self.assertEqual(response.status_code, 200, response.text[:2000])
            self.assertIn("Installed", self.addons_panel("Install", "plone.restapi", site))
        for client in self.clients(ADMIN).values():
            client.rest(
                "POST",
                "@users",
                {
                    "username": MEMBER[0],
                    "email": "member@example.org",
                    "password": MEMBER[1],
                    "roles": ["Member"],
                },
            )

    def addons_panel(self, action: str, product: str = "plone.pgcatalog", site: str = "Plone") -> str:
        """Press *action* ("Install" or "Uninstall") for *product* in the
        Add-ons panel of *site*; the status message shown after."""
        client = Client(self.server, site, ADMIN)
        soup = client.page("prefs_install_products_form")
        field = "install_product" if action == "Install" else "uninstall_product"
        hidden = soup.find("input", attrs={"name": field, "value": product})
        self.assertIsNotNone(hidden, f"{action} {product} is not offered in the Add-ons panel")
        form = hidden.find_parent("form")
        data = {i["name"]: i.get("value", "") for i in form.find_all("input") if i.get("name")}
        response = client.http.post(client.url(form["action"]), data=data)
        self.assertEqual(response.status_code, 200)
        messages = BeautifulSoup(response.text, "html.parser").select(".statusmessage, .alert")
        return " ".join(m.get_text(" ", strip=True) for m in messages)

    def make_content(self) -> None:
        """Through the REST API: a folder of three pages, a news item; edits,
        workflow, a move, a reorder and a delete."""
        for client in self.clients(ADMIN).values():
            client.rest("POST", "", {"@type": "Folder", "id": "library", "title": "Library"})
            for ident, title, text in (
                ("alpha", "Alpha volume", "Reading about tulips"),
                ("beta", "Beta volume", "Reading about roses"),
                ("gamma", "Gamma volume", "Notes on tulips and roses, roses and more roses"),
            ):
                client.rest(
                    "POST",
                    "library",
                    {
                        "@type": "Document",
                        "id": ident,
                        "title": title,
                        "text": {"data": text, "content-type": "text/html"},
                    },
                )
            client.rest("POST", "", {"@type": "News Item", "id": "tidings", "title": "Tidings of tulips"})
            client.rest("PATCH", "library/beta", {"title": "Beta edition", "subjects": ["flowers", "red"]})
            for path in ("library", "library/alpha", "library/beta", "tidings"):
                client.rest("POST", f"{path}/@workflow/publish")
            client.rest("POST", "library/@move", {"source": client.url("tidings")})
            client.rest("PATCH", "library", {"ordering": {"obj_id": "gamma", "delta": "top"}})
            client.rest("POST", "", {"@type": "Document", "id": "scrap", "title": "Scrap of tulips"})
            client.rest("DELETE", "scrap")

    def classic_forms(self) -> None:
        """Through the classic UI: add, edit, publish and delete pages."""
        for client in self.clients(ADMIN).values():
            url = client.submit(
                "library/++add++Document",
                "form.buttons.save",
                {"form.widgets.IDublinCore.title": "Delta volume from the form"},
            )
            self.assertIn("/library/", url)
            path = client.content_path(url)
            client.submit(
                f"{path}/edit",
                "form.buttons.save",
                {"form.widgets.IDublinCore.title": "Delta volume, edited"},
            )
            # the workflow menu's "Publish", as clicked
            link = client.page(path).find(
                "a", href=re.compile(r"content_status_modify\?workflow_action=publish")
            )
            self.assertIsNotNone(link, f"no Publish in the workflow menu of {path} on {client.site}")
            client.http.get(link["href"]).raise_for_status()
            doomed = client.submit(
                "library/++add++Document",
                "form.buttons.save",
                {"form.widgets.IDublinCore.title": "Doomed tulips"},
            )
            doomed = client.content_path(doomed)
            client.submit(f"{doomed}/delete_confirmation", "form.buttons.Delete")

    # -- the searches ------------------------------------------------------

    @staticmethod
    def rest_search(client: Client, **query) -> tuple:
        found = client.rest("GET", "@search", **query)
        return found["items_total"], [
            (client.local(item["@id"]), item["title"], item.get("review_state")) for item in found["items"]
        ]

    @staticmethod
    def querystring_search(client: Client) -> tuple:
        found = client.rest(
            "POST",
            "@querystring-search",
            {
                "query": [
                    {
                        "i": "portal_type",
                        "o": "plone.app.querystring.operation.selection.any",
                        "v": ["Document"],
                    },
                    {
                        "i": "SearchableText",
                        "o": "plone.app.querystring.operation.string.contains",
                        "v": "tulips",
                    },
                ],
                "sort_on": "sortable_title",
                "b_size": 2,
            },
        )
        return found["items_total"], [client.local(item["@id"]) for item in found["items"]]

    @staticmethod
    def search_page(client: Client, text: str) -> list:
        soup = client.page("@@search", SearchableText=text, sort_on="sortable_title")
        results = soup.select("#search-results .result-title a")
        return [client.local(a["href"]) for a in results]

    @staticmethod
    def folder_contents(client: Client) -> tuple:
        query = {
            "criteria": [
                {
                    "i": "path",
                    "o": "plone.app.querystring.operation.string.path",
                    "v": f"/{client.site}/library::1",
                }
            ],
            "sort_on": "getObjPositionInParent",
            "sort_order": "ascending",
        }
        found = client.rest(
            "GET",
            "@@getVocabulary",
            name="plone.app.vocabularies.Catalog",
            query=json.dumps(query),
            attributes=json.dumps(["path", "Title", "review_state"]),
            batch=json.dumps({"page": 1, "size": 50}),
        )
        return found["total"], [
            (client.local(r["path"]), r["Title"], r["review_state"]) for r in found["results"]
        ]

    FACETS = ("portal_type", "review_state", "Subject")
    FACET_QUERY = [
        {"i": "SearchableText", "o": "plone.app.querystring.operation.string.contains", "v": "tulips"},
        {"i": "review_state", "o": "plone.app.querystring.operation.selection.any", "v": ["published"]},
    ]

    @classmethod
    def facet_counts(cls, client: Client) -> dict:
        """Per facet, the counts of each value of a word search: from
        ``@facet-count`` where the catalog has it, else by counting the
        values of every item ``@querystring-search`` finds without the
        facet's own criterion (the stock site, or ours uninstalled)."""
        response = client.http.post(
            client.url("@facet-count"),
            json={"query": cls.FACET_QUERY, "facets": list(cls.FACETS)},
            headers={"Accept": "application/json"},
        )
        if response.status_code == 200:
            found = response.json()["facets"]
            return {name: {row["value"]: row["count"] for row in found[name]["data"]} for name in cls.FACETS}
        assert response.status_code == 404, (response.status_code, response.text[:2000])
        counts = {}
        for name in cls.FACETS:
            others = [row for row in cls.FACET_QUERY if row["i"] != name]
            items = client.rest("POST", "@querystring-search", {"query": others, "b_size": 1000, "metadata_fields": [name]})
            tally: dict = {}
            for item in items["items"]:
                values = item[name] if isinstance(item[name], list) else [item[name]]
                for value in values:
                    tally[value] = tally.get(value, 0) + 1
            counts[name] = tally
        return counts

    def searches(self, when: str) -> None:
        rest = self.rest_search
        self.same(f"{when}: everything by title", lambda c: rest(c, sort_on="sortable_title", b_size=100))
        self.same(f"{when}: a word", lambda c: rest(c, SearchableText="tulips", sort_on="sortable_title"))
        self.same(f"{when}: a word, by relevance", lambda c: rest(c, SearchableText="roses"))
        self.same(f"{when}: keywords", lambda c: rest(c, Subject="flowers"))
        self.same(
            f"{when}: a folder in order",
            lambda c: rest(
                c,
                **{"path.query": f"/{c.site}/library", "path.depth": 1, "sort_on": "getObjPositionInParent"},
            ),
        )
        self.same(f"{when}: a batch", lambda c: rest(c, sort_on="sortable_title", b_size=2, b_start=2))
        self.same(f"{when}: @querystring-search", self.querystring_search)
        self.same(f"{when}: @@search", lambda c: self.search_page(c, "tulips"))
        self.same(f"{when}: facet counts", self.facet_counts)
        # counted by plone.pgcatalog's statement while it is installed
        ours = Client(self.server, "Plone", None).http.post(
            self.server.url + "/Plone/@facet-count", json={"facet": "Subject"}, headers={"Accept": "application/json"}
        )
        installed = self.catalog_rows() is not None
        self.assertEqual(ours.status_code, 200 if installed else 404, f"{when}: {ours.text[:500]}")
        # "did you mean", as each user: the word of the pages they see
        for auth in (None, MEMBER, ADMIN):
            client = Client(self.server, "Plone", auth)
            tulips = self.rest_search(client, SearchableText="tulips")[0]
            response = client.http.get(
                client.url("@suggestions"), params={"SearchableText": "tulipz"}, headers={"Accept": "application/json"}
            )
            self.assertEqual(response.status_code, 200 if installed else 404, f"{when}: {response.text[:500]}")
            if installed:
                self.assertEqual(response.json()["items"][:1], ["tulips"] if tulips else [], f"{when} as {auth}")
            self.search_page_additions(client, installed, bool(tulips), f"{when} as {auth}")
        self.same(f"{when}: folder contents", self.folder_contents, users=(ADMIN,))

    def search_page_additions(self, client: Client, installed: bool, tulips: bool, what: str) -> None:
        """The search page's counts, snippets and "did you mean" while the
        catalog is installed; Plone's own page without them."""
        soup = client.page("@@search", SearchableText="tulips")
        found = soup.select("#search-results .result-title a")
        snippets = soup.select("#search-results .pgcatalog-snippet")
        counts = [int(badge.get_text()) for badge in soup.select(".pgcatalog-count[data-facet='portal_type']")]
        suggested = client.page("@@search", SearchableText="tulipz").select(".pgcatalog-suggestion a")
        if not installed:
            self.assertEqual((snippets, counts, suggested), ([], [], []), what)
            return
        self.assertEqual(len(snippets), len(found), what)
        self.assertTrue(all(snippet.select("mark") for snippet in snippets), what)
        self.assertEqual(sum(counts), len(found), what)  # each item is of one of the types
        self.assertEqual([a.get_text() for a in suggested], ["tulips"] if tulips else [], what)

    # -- the test ----------------------------------------------------------

    def test_life_of_a_site(self):
        self.add_sites()
        self.assertIsNone(self.catalog_rows())  # a stock database so far
        message = self.addons_panel("Install")
        self.assertIn("Installed", message)
        self.assertGreater(self.catalog_rows(), 0)
        self.searches("installed")
        self.no_errors()

        self.server.restart()
        self.make_content()
        self.searches("content through REST")
        self.server.restart()
        self.searches("after a restart")
        self.classic_forms()
        self.searches("content through the classic forms")
        self.no_errors()

        self.server.restart()
        message = self.addons_panel("Uninstall")
        self.assertIn("Uninstalled", message)
        self.assertIsNone(self.catalog_rows(), self.server.tail())  # the catalog's columns went
        self.searches("uninstalled")
        self.server.restart()
        self.searches("uninstalled, restarted")

        message = self.addons_panel("Install")
        self.assertIn("Installed", message)
        self.assertGreater(self.catalog_rows(), 0)
        self.searches("installed again")
        self.server.restart()
        for client in self.clients(ADMIN).values():
            client.rest("POST", "library", {"@type": "Document", "id": "epsilon", "title": "Epsilon tulips"})
        self.searches("installed again, restarted")
        self.no_errors()


class DemoFirstRunTest(unittest.TestCase):
    """``./scripts/demo`` on an empty ``var/``, its embedded PostgreSQL
    included, as a new user runs it first."""

    def test_first_run(self):
        var = Path(tempfile.mkdtemp(prefix="pgcatalog-demo-"))
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "PGCATALOG_DSN"}
        env["PYTHONUNBUFFERED"] = "1"
        log = var / "demo.log"
        with open(log, "w") as output:
            process = subprocess.Popen(
                [str(REPO / "scripts" / "demo"), "--port", str(port), "--var", str(var)],
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 900
            while "Serving http" not in log.read_text(errors="replace"):
                self.assertIsNone(process.poll(), f"the demo exited:\n{log.read_text()[-5000:]}")
                self.assertLess(time.monotonic(), deadline, log.read_text()[-5000:])
                time.sleep(1)
            soup = BeautifulSoup(
                requests.get(
                    f"http://127.0.0.1:{port}/Plone/@@search", params={"SearchableText": "PostgreSQL"}
                ).text,
                "html.parser",
            )
            titles = [a.get_text(strip=True) for a in soup.select("#search-results .result-title a")]
            self.assertIn("The catalog moved to PostgreSQL", titles)
            # the search page's additions: snippets, counts, "did you mean"
            marked = {mark.get_text().lower() for mark in soup.select("#search-results .pgcatalog-snippet mark")}
            self.assertEqual(marked, {"postgresql"})
            counts = {b["data-value"]: b.get_text() for b in soup.select(".pgcatalog-count[data-facet='portal_type']")}
            self.assertEqual(counts["News Item"], "1")
            misspelt = BeautifulSoup(
                requests.get(f"http://127.0.0.1:{port}/Plone/@@search", params={"SearchableText": "postgress"}).text,
                "html.parser",
            )
            self.assertEqual([a.get_text() for a in misspelt.select(".pgcatalog-suggestion a")], ["postgresql"])
            # the catalog's additions, as Anonymous
            site = f"http://127.0.0.1:{port}/Plone"
            json_only = {"Accept": "application/json"}
            suggested = requests.get(f"{site}/@suggestions", params={"SearchableText": "postgress"}, headers=json_only)
            self.assertEqual(suggested.json()["items"][:1], ["postgresql"], suggested.text[:2000])
            counted = requests.post(f"{site}/@facet-count", json={"facet": "portal_type"}, headers=json_only)
            data = {row["value"]: row["count"] for row in counted.json()["facets"]["portal_type"]["data"]}
            self.assertGreater(data.get("Document", 0), 0, counted.text[:2000])
            self.assertNotIn("Traceback", log.read_text())
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            process.wait(120)
            output = log.read_text(errors="replace")
            shutil.rmtree(var, ignore_errors=True)
        self.assertEqual(process.returncode, 0, output[-5000:])
