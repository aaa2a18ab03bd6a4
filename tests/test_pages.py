"""Plone's own pages, published through Zope, searching this catalog."""

from helpers import CatalogTestCase
from plone import api
from plone.app.contentlisting.interfaces import IContentListing
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.testing.zope import Browser

from urllib.parse import quote

import json
import re
import transaction


class PagesTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.portal.portal_workflow.setChainForPortalTypes(
            ("Document", "Folder"), "simple_publication_workflow"
        )
        folder = api.content.create(container=self.portal, type="Folder", id="guide", title="Field guide")
        api.content.transition(obj=folder, transition="publish")
        for i, (title, publish) in enumerate(
            [
                ("Catalog basics", True),
                ("Catalog internals", True),
                ("Catalog secrets", False),
                ("Weather", True),
            ]
        ):
            doc = api.content.create(container=folder, type="Document", id=f"page-{i}", title=title)
            if publish:
                api.content.transition(obj=doc, transition="publish")
        transaction.commit()
        self.browser = Browser(self.layer["app"])
        self.browser.handleErrors = False

    def test_results_adapt_to_content_listing(self):
        listing = IContentListing(self.catalog(portal_type="Document", sort_on="sortable_title"))
        self.assertEqual(
            [item.Title() for item in listing],
            ["Catalog basics", "Catalog internals", "Catalog secrets", "Weather"],
        )

    def search_results(self, url):
        """The titles listed by the search page's result list."""
        self.browser.open(url)
        html = self.browser.contents
        listing = html[
            html.index('<ol class="searchResults') : html.index(
                "</ol>", html.index('<ol class="searchResults')
            )
        ]
        return re.findall(r'<div class="result-title">\s*<a [^>]*>\s*([^<]*?)\s*</a>', listing)

    def test_search_page_as_anonymous(self):
        titles = self.search_results(
            self.portal.absolute_url() + "/@@search?SearchableText=catalog&sort_on=sortable_title"
        )
        self.assertEqual(titles, ["Catalog basics", "Catalog internals"])  # not the private one

    def test_search_page_as_owner_and_folder_listing(self):
        self.browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        titles = self.search_results(
            self.portal.absolute_url() + "/@@search?SearchableText=catalog&sort_on=sortable_title"
        )
        self.assertEqual(titles, ["Catalog basics", "Catalog internals", "Catalog secrets"])
        # folder contents lists a folder through the catalog vocabulary, from
        # the navigation root
        query = {
            "criteria": [{"i": "path", "o": "plone.app.querystring.operation.string.path", "v": "/guide::1"}],
            "sort_on": "getObjPositionInParent",
            "sort_order": "ascending",
        }
        self.browser.open(
            self.portal.absolute_url()
            + "/@@getVocabulary?name=plone.app.vocabularies.Catalog&query="
            + quote(json.dumps(query))
            + "&attributes="
            + quote(json.dumps(["Title"]))
            + "&batch="
            + quote(json.dumps({"page": 1, "size": 30}))
        )
        listed = json.loads(self.browser.contents)
        self.assertEqual(
            [item["Title"] for item in listed["results"]],
            ["Catalog basics", "Catalog internals", "Catalog secrets", "Weather"],
        )
        self.assertEqual(listed["total"], 4)
        # global navigation is a catalog query too
        self.browser.open(self.portal.absolute_url())
        nav = self.browser.contents.split('id="portal-globalnav"', 1)[1].split("</ul>", 1)[0]
        self.assertIn("Field guide", nav)
