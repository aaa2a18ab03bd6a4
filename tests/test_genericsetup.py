"""An add-on's ``catalog.xml``, imported after install, configures the
catalog's indexes as it configures ZCatalog's: compared on both sites."""

from DateTime import DateTime
from helpers import BothSitesTestCase
from helpers import build_content
from helpers import relpaths
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from Products.GenericSetup.interfaces import IBody
from Products.GenericSetup.interfaces import INode
from Products.GenericSetup.testing import DummySetupEnviron
from zope.component import getMultiAdapter
from zope.component.hooks import setSite

import transaction


ADDON = """<?xml version="1.0"?>
<object name="portal_catalog">
 <index name="addon_subjects" meta_type="KeywordIndex">
  <indexed_attr value="Subject"/>
 </index>
 <index name="addon_span" meta_type="DateRangeIndex" since_field="created" until_field="expires"/>
 <index name="modification_date" meta_type="DateIndex">
  <property name="index_naive_time_as_local">True</property>
 </index>
 <column value="addon_column"/>
</object>
"""

# the same index, now on another attribute: ZCatalog empties it
RECONFIGURED = """<?xml version="1.0"?>
<object name="portal_catalog">
 <index name="addon_subjects" meta_type="KeywordIndex">
  <indexed_attr value="portal_type"/>
 </index>
</object>
"""

# a lexicon of the add-on's own, without case folding, and an index on it
LEXICON = """<?xml version="1.0"?>
<object name="portal_catalog">
 <object name="addon_lexicon" meta_type="ZCTextIndex Lexicon">
  <element name="Whitespace splitter" group="Word Splitter"/>
 </object>
 <index name="addon_title" meta_type="ZCTextIndex">
  <indexed_attr value="Title"/>
  <extra name="index_type" value="Okapi BM25 Rank"/>
  <extra name="lexicon_id" value="addon_lexicon"/>
 </index>
</object>
"""

# the lexicon reconfigured: now it folds case
LEXICON_FOLDING = LEXICON.replace(
    '"Word Splitter"/>', '"Word Splitter"/>\n  <element name="Case Normalizer" group="Case Normalizer"/>'
)

# and once more, on review_state: searched in the importing transaction
ON_REVIEW_STATE = RECONFIGURED.replace("portal_type", "review_state")


def stored_pipeline(site) -> list[str]:
    """The add-on lexicon's pipeline as committed, read on a new connection."""
    conn = site._p_jar.db().open()
    try:
        lexicon = conn.root()["Application"][site.getId()].portal_catalog.addon_lexicon
        return lexicon.getPipelineNames()
    finally:
        conn.close()


def import_catalog_xml(site, xml: str) -> None:
    environ = DummySetupEnviron()
    environ._should_purge = False  # an extension profile
    importer = getMultiAdapter((site.portal_catalog, environ), IBody)
    importer.body = xml.encode()


class CatalogXMLTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        for site in self.sites:
            build_content(site)
        login(self.layer["app"], SITE_OWNER_NAME)

    def each(self, action) -> None:
        for site in self.sites:
            setSite(site)
            action(site)
        transaction.commit()

    def found(self, **query) -> list[list[str]]:
        results = []
        for site in self.sites:
            setSite(site)
            brains = site.portal_catalog.unrestrictedSearchResults(sort_on="id", **query)
            results.append(relpaths(site, brains))
        return results

    def assert_same(self, expect_some: bool, **query) -> None:
        pg, z = self.found(**query)
        self.assertEqual(pg, z, query)
        self.assertEqual(bool(z), expect_some, query)

    def test_addon_indexes_configured_and_reindexed(self):
        self.each(lambda site: import_catalog_xml(site, ADDON))
        for site in self.sites:
            catalog = site.portal_catalog
            self.assertIn("addon_subjects", catalog.indexes())
            self.assertIn("addon_column", catalog.schema())
        # new indexes are empty until reindexed, on both
        self.assert_same(False, addon_subjects="alpha")
        names = ["addon_subjects", "addon_span", "modification_date"]
        self.each(lambda site: site.portal_catalog.manage_reindexIndex(ids=names))
        now = DateTime()
        self.assert_same(True, addon_subjects="alpha")
        self.assert_same(True, addon_subjects={"query": ["alpha", "beta"], "operator": "and"})
        self.assert_same(True, addon_span=now)
        self.assert_same(True, modification_date={"query": now - 1, "range": "min"})
        self.assert_same(False, modification_date={"query": now + 1, "range": "min"})

        # new settings empty the index, on both; a reindex fills it again
        self.each(lambda site: import_catalog_xml(site, RECONFIGURED))
        self.assert_same(False, addon_subjects="alpha")
        self.assert_same(False, addon_subjects="Folder")
        self.each(lambda site: site.portal_catalog.manage_reindexIndex(ids=["addon_subjects"]))
        self.assert_same(False, addon_subjects="alpha")
        self.assert_same(True, addon_subjects="Folder")

        # in the transaction that imports: emptied at once, filled by the reindex
        for site in self.sites:
            setSite(site)
            import_catalog_xml(site, ON_REVIEW_STATE)
        self.assert_same(False, addon_subjects="Folder")
        self.assert_same(False, addon_subjects="published")
        for site in self.sites:
            setSite(site)
            site.portal_catalog.manage_reindexIndex(ids=["addon_subjects"])
        self.assert_same(False, addon_subjects="Folder")
        self.assert_same(True, addon_subjects="published")
        transaction.commit()
        self.assert_same(False, addon_subjects="Folder")
        self.assert_same(True, addon_subjects="published")

    def test_addon_lexicon(self):
        """An add-on's lexicon splits and folds words as ZCatalog's does,
        before and after it is reconfigured, and is kept within the tool."""
        self.each(lambda site: import_catalog_xml(site, LEXICON))
        self.each(lambda site: site.portal_catalog.manage_reindexIndex(ids=["addon_title"]))
        # titles are "Alpha beta 003": without case folding "Alpha" is only a first word
        title = self.sites[1].portal_catalog.unrestrictedSearchResults(id="item-000")[0].Title
        word = title.split()[0]
        self.assertTrue(word[0].isupper(), title)
        self.assert_same(True, addon_title=word)
        capitalised, lower = self.found(addon_title=word), self.found(addon_title=word.lower())
        self.assertEqual(lower[0], lower[1])
        self.assertNotEqual(capitalised[1], lower[1])
        self.assert_same(True, addon_title=word[:3] + "*")
        self.assertEqual(stored_pipeline(self.sites[0]), ["Splitter"])

        self.each(lambda site: import_catalog_xml(site, LEXICON_FOLDING))
        self.assertEqual(stored_pipeline(self.sites[0]), ["Splitter", "CaseNormalizer"])
        self.each(lambda site: site.portal_catalog.manage_reindexIndex(ids=["addon_title"]))
        self.assert_same(True, addon_title=word)
        self.assert_same(True, addon_title=word.lower())
        self.assertEqual(self.found(addon_title=word)[0], self.found(addon_title=word.lower())[0])

        pg = self.sites[0].portal_catalog
        self.assertEqual(
            {o.getId() for o in pg.objectValues()},
            {"plone_lexicon", "plaintext_lexicon", "htmltext_lexicon", "addon_lexicon"},
        )
        self.assertTrue(all(getattr(o, "_p_oid", None) is None for o in pg.objectValues()))
        pg_body, z_body = (
            getMultiAdapter((site.portal_catalog.addon_lexicon, DummySetupEnviron()), INode).node.toxml()
            for site in self.sites
        )
        self.assertEqual(pg_body, z_body)
        self.assertIn('name="Case Normalizer"', pg_body)

    def test_a_lexicon_added_after_a_search_is_read(self):
        """The catalog keeps its lexicons between searches: one added since,
        and one reconfigured since, in the same transaction, are read."""
        self.assert_same(True, SearchableText="alpha")  # the lexicons are read, and kept
        for site in self.sites:
            setSite(site)
            import_catalog_xml(site, LEXICON)
            site.portal_catalog.manage_reindexIndex(ids=["addon_title"])
        title = self.sites[1].portal_catalog.unrestrictedSearchResults(id="item-000")[0].Title
        word = title.split()[0]
        self.assert_same(True, addon_title=word)  # split on white space only: "Alpha" as it is
        self.assertNotEqual(self.found(addon_title=word)[0], self.found(addon_title=word.lower())[0])
        for site in self.sites:
            setSite(site)
            import_catalog_xml(site, LEXICON_FOLDING)
            site.portal_catalog.manage_reindexIndex(ids=["addon_title"])
        self.assert_same(True, addon_title=word.lower())
        self.assertEqual(self.found(addon_title=word)[0], self.found(addon_title=word.lower())[0])

    def test_export_names_the_settings(self):
        self.each(lambda site: import_catalog_xml(site, ADDON))
        bodies = []
        for site in self.sites:
            setSite(site)
            index = site.portal_catalog._catalog.getIndex("addon_span")
            bodies.append(getMultiAdapter((index, DummySetupEnviron()), INode).node.toxml())
        self.assertEqual(bodies[0], bodies[1])
        self.assertIn('since_field="created"', bodies[0])
