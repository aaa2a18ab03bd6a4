"""plone.app.multilingual beside the catalog, compared with a stock site.

PAM keeps a translation group in the ``TranslationGroup`` index and every
item's language in ``Language`` (both by its ``catalog.xml``, after our
install), and it reads them back at once, in the transaction that wrote
them: ``register_translation`` reindexes and then asks the catalog whether
the language is taken.  Plone restricts navigation and the language root's
searches to the current language.  Each answer is compared with the stock
ZCatalog site's, as the site owner, a Member and Anonymous.
"""

from helpers import AddonFixture
from helpers import BothSitesTestCase
from helpers import relpaths
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.pgcatalog.testing import PGFunctionalTesting
from plone.testing.zope import Browser
from Products.CMFCore.utils import getToolByName
from zope.component.hooks import setSite

import json
import transaction


MEMBER = "member"
PASSWORD = "secret-member-password"


class MultilingualFixture(AddonFixture):
    def configure(self, site) -> None:
        from plone.app.multilingual.browser.setup import SetupMultilingualSite

        getToolByName(site, "portal_languages").addSupportedLanguage("de")
        SetupMultilingualSite().setupSite(site)  # the language root folders /en and /de
        api.user.create(email="m@example.org", username=MEMBER, password=PASSWORD, roles=("Member",))


MULTILINGUAL_FIXTURE = MultilingualFixture(
    packages=(), profiles=("plone.app.multilingual:default",), name="plone.pgcatalog:Multilingual"
)
MULTILINGUAL_TESTING = PGFunctionalTesting(
    bases=(MULTILINGUAL_FIXTURE,), name="plone.pgcatalog:MultilingualFunctional"
)


def translated_site(site) -> None:
    """English content in /en, some of it translated into /de: a published
    folder and page with their translations, a private page whose
    translation is published, an English page never translated and a page
    only in German."""
    from plone.app.multilingual import api as pam

    setSite(site)
    login(site.aq_parent, SITE_OWNER_NAME)
    en, de = site["en"], site["de"]
    news = api.content.create(container=en, type="Folder", id="news", title="News river")
    welcome = api.content.create(
        container=news, type="Document", id="welcome", title="Welcome harbor", subject=("shared",)
    )
    secret = api.content.create(container=en, type="Document", id="secret", title="Secret lantern")
    api.content.create(container=en, type="Document", id="only-en", title="Only english meadow")
    api.content.create(container=de, type="Document", id="nur-de", title="Nur deutsch Wiese")
    for obj in (news, welcome):
        api.content.transition(obj=obj, transition="publish")
    for obj, title in ((news, "Nachrichten Fluss"), (welcome, "Willkommen Hafen"), (secret, "Geheim Laterne")):
        translation = pam.translate(obj, "de")
        translation.title = title
        translation.reindexObject()
        api.content.transition(obj=translation, transition="publish")
    api.content.transition(obj=de["nur-de"], transition="publish")
    transaction.commit()


class MultilingualTest(BothSitesTestCase):
    layer = MULTILINGUAL_TESTING
    maxDiff = None

    def setUp(self):
        super().setUp()
        for site in self.sites:
            translated_site(site)

    def groups(self, site) -> dict:
        """Each translation group as the paths it holds (the group ids are
        random, so the two sites' differ)."""
        setSite(site)
        everything = site.portal_catalog.unrestrictedSearchResults(path="/".join(site.getPhysicalPath()))
        groups = {}
        for brain in everything:
            if brain.TranslationGroup:
                groups.setdefault(brain.TranslationGroup, []).append(brain)
        return {tg: sorted(relpaths(site, brains)) for tg, brains in groups.items()}

    def answers(self, site, user: str | None) -> dict:
        """What the catalog answers on *site* to PAM's and Plone's questions,
        as *user* (None: Anonymous)."""
        from plone.app.multilingual.interfaces import ITranslationManager

        setSite(site)
        catalog = site.portal_catalog
        groups = self.groups(site)
        welcome_tg = next(tg for tg, paths in groups.items() if "/en/news/welcome" in paths)
        secret_tg = next(tg for tg, paths in groups.items() if "/en/secret" in paths)
        if user is None:
            logout()
        else:
            login(site.aq_parent if user == SITE_OWNER_NAME else site, user)

        def found(**query):
            return relpaths(site, catalog.searchResults(**query))

        root = "/".join(site.getPhysicalPath())
        manager = ITranslationManager(site["en"]["news"]["welcome"])
        answers = {
            "en": sorted(found(Language="en")),
            "de": sorted(found(Language="de")),
            "both, by language": found(Language=["de", "en"], sort_on=["Language", "sortable_title"]),
            "not de": sorted(found(Language={"query": ["en", "de"], "not": "de"})),
            "welcome's group": sorted(found(TranslationGroup=welcome_tg)),
            "welcome's group in de": found(TranslationGroup=welcome_tg, Language="de"),
            "secret's group": sorted(found(TranslationGroup=secret_tg)),
            "german words in de": found(SearchableText="Hafen", Language="de"),
            "german words in en": found(SearchableText="Hafen", Language="en"),
            # global sections and @navigation: the language root, its language
            "tabs in de": found(
                path={"query": f"{root}/de", "depth": 1},
                Language="de",
                is_default_page=False,
                sort_on="getObjPositionInParent",
            ),
            "search below /de": sorted(found(path=f"{root}/de", SearchableText="Nachrichten OR Wiese")),
            "restricted translations": sorted(manager.get_restricted_translations()),
            "translated languages": sorted(manager.get_translated_languages()),
        }
        login(site.aq_parent, SITE_OWNER_NAME)
        answers["groups"] = sorted(groups.values())
        return answers

    def same_answers(self, label: str) -> dict:
        for user in (SITE_OWNER_NAME, MEMBER, None):
            ours, stock = (self.answers(site, user) for site in self.sites)
            self.assertEqual(ours, stock, f"{label}, as {user or 'Anonymous'}")
        return ours

    def test_translations(self):
        answers = self.same_answers("as made")
        # what the comparison rests on: groups of two, each language seen
        self.assertIn(["/de/news/welcome", "/en/news/welcome"], answers["groups"])
        self.assertIn("/de/nur-de", self.answers(self.sites[0], None)["de"])
        self.assertEqual(answers["welcome's group in de"], ["/de/news/welcome"])
        owner = self.answers(self.sites[0], SITE_OWNER_NAME)
        self.assertIn("/en/secret", owner["secret's group"])
        self.assertNotIn("/en/secret", self.answers(self.sites[0], None)["secret's group"])

    def test_linking_unlinking_and_changing_language(self):
        """``register_translation`` reads what it has just reindexed; a
        changed language and a removed translation move the item between
        groups and languages."""
        from plone.app.multilingual.interfaces import ITranslationManager
        from plone.base.interfaces import ILanguage

        for site in self.sites:
            setSite(site)
            login(site.aq_parent, SITE_OWNER_NAME)
            only_en = site["en"]["only-en"]
            manager = ITranslationManager(only_en)
            manager.register_translation("de", site["de"]["nur-de"])
            # the same language twice in one group is refused, from the
            # catalog's answer in this transaction
            with self.assertRaises(KeyError):
                manager.register_translation("de", site["de"]["news"]["welcome"])
            ITranslationManager(site["en"]["news"]["welcome"]).remove_translation("de")
            ILanguage(site["en"]["secret"]).set_language("")
            transaction.commit()
        answers = self.same_answers("after linking, unlinking and a changed language")
        self.assertIn(["/de/nur-de", "/en/only-en"], answers["groups"])
        self.assertNotIn("/en/secret", answers["en"])

    def test_rebuild(self):
        for site in self.sites:
            setSite(site)
            site.portal_catalog.clearFindAndRebuild()
            transaction.commit()
        self.same_answers("after clearFindAndRebuild")

    def request(self, site, path: str, user: str | None) -> tuple[str, str]:
        """(status or redirect target, body) of a GET through the publisher."""
        browser = Browser(self.layer["app"])
        browser.handleErrors = True
        browser.raiseHttpErrors = False
        browser.followRedirects = False
        if user == SITE_OWNER_NAME:
            browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        elif user is not None:
            browser.addHeader("Authorization", f"Basic {user}:{PASSWORD}")
        if path.startswith("/@") or "/@" in path:
            browser.addHeader("Accept", "application/json")
        browser.open(site.absolute_url() + path)
        location = browser.headers.get("location", "")
        return location.replace(site.absolute_url(), "<site>") or browser.headers["status"], browser.contents

    def test_over_http(self):
        """The language selector's and the universal link's redirects (a
        search by translation group and language) and the REST navigation
        of the German root."""
        for user in (SITE_OWNER_NAME, MEMBER, None):
            answers = []
            for site in self.sites:
                setSite(site)
                tg = next(tg for tg, paths in self.groups(site).items() if "/en/secret" in paths)
                switched = (
                    self.request(site, f"/@@multilingual-selector/{tg}/de", user)[0],
                    self.request(site, f"/en/@@multilingual-universal-link/{tg}/de", user)[0],
                )
                status, body = self.request(site, "/de/@navigation?expand.navigation.depth=3", user)
                navigation = json.loads(body.decode().replace(site.absolute_url(), "<site>")) if status.startswith("200") else status
                answers.append((switched, navigation))
            self.assertEqual(answers[0], answers[1], f"as {user or 'Anonymous'}")
            switched, navigation = answers[0]
            self.assertIn("/de/secret", switched[0])
            self.assertIn("/de/secret", switched[1])
            self.assertIn("<site>/de/news", json.dumps(navigation))
