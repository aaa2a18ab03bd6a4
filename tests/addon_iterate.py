"""plone.app.iterate (working copies) beside the catalog, compared with a stock site.

A checkout pastes a private ``copy_of_...`` of a published page beside it
and marks the copy and its baseline with interfaces without indexing them:
CMFCore's queue indexes the new copy after the marking, but the baseline only
gets partial reindexes (``review_state``, its metadata refreshed), so its
``object_provides`` lacks ``IBaseline`` until a full reindex (a rebuild) and
keeps it after a cancel.  A check-in writes the copy into the baseline and
deletes the copy in one transaction.  After each step the answers for each
kind of user, the records (index entries and metadata) and iterate's own
relations must be ZCatalog's, stale entries included.
"""

from DateTime import DateTime
from helpers import AddonFixture
from helpers import BothSitesTestCase
from helpers import relpaths
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.app.textfield.value import RichTextValue
from plone.pgcatalog.testing import PGFunctionalTesting
from plone.uuid.interfaces import IMutableUUID
from Products.CMFCore.indexing import processQueue
from zope.annotation.interfaces import IAnnotations
from zope.component import getMultiAdapter
from zope.component.hooks import setSite

import Missing
import transaction


WC = "plone.app.iterate.interfaces.IWorkingCopy"
BASELINE = "plone.app.iterate.interfaces.IBaseline"

CONTENT = (  # path, portal_type, title, text words, publish
    ("front", "Document", "Front page", "harbor lantern", True),
    ("section", "Folder", "Section", "", True),
    ("section/page", "Document", "Section page", "meadow willow", True),
    ("section/other", "Document", "Other page", "copper summit", True),
    ("section/draft", "Document", "Draft page", "meadow stone", False),
    ("news", "News Item", "Some news", "river stone", True),
)
USERS = ("alice", "bob")
"""alice edits the section (Editor and Contributor there): she checks its
pages out and owns those copies; bob is a plain Member."""


class IterateFixture(AddonFixture):
    """plone.app.iterate on both sites, with the same pages, UIDs and users."""

    def configure(self, site) -> None:
        for name in USERS:
            api.user.create(email=f"{name}@example.org", username=name, password=f"secret-{name}-1")
        for n, (path, portal_type, title, words, publish) in enumerate(CONTENT):
            parent, _, id = path.rpartition("/")
            container = site.unrestrictedTraverse(parent) if parent else site
            extra = (
                {"text": RichTextValue(f"<p>{words}</p>", "text/html", "text/x-html-safe")} if words else {}
            )
            obj = api.content.create(
                container=container, type=portal_type, id=id, title=title, subject=("iterate",), **extra
            )
            IMutableUUID(obj).set(f"{n + 1:032x}")
            if publish:
                api.content.transition(obj=obj, transition="publish")
            obj.reindexObject()
        site["section"].manage_setLocalRoles("alice", ["Editor", "Contributor"])
        site["section"].reindexObjectSecurity()


ITERATE_FIXTURE = IterateFixture(
    packages=("plone.app.iterate",), profiles=("plone.app.iterate:default",), name="plone.pgcatalog:Iterate"
)
ITERATE_TESTING = PGFunctionalTesting(bases=(ITERATE_FIXTURE,), name="plone.pgcatalog:IterateFunctional")


def policy(obj):
    from plone.app.iterate.interfaces import ICheckinCheckoutPolicy

    return ICheckinCheckoutPolicy(obj)


class IterateTest(BothSitesTestCase):
    layer = ITERATE_TESTING
    maxDiff = None

    def setUp(self):
        super().setUp()
        self.app = self.layer["app"]
        self.order = ["", *(path for path, *_ in CONTENT)]  # the order of last changes, the site first

    # -- doing the same on both sites ---------------------------------------

    def as_user(self, site, user):
        setSite(site)
        if user is None:
            logout()
        elif user == SITE_OWNER_NAME:
            login(self.app, user)
        else:
            login(site, user)

    def each(self, change, user=SITE_OWNER_NAME, touched=(), commit=True):
        """*change*(site) as *user* on both sites; *touched* paths were
        modified by it, last of all."""
        for site in self.sites:
            self.as_user(site, user)
            change(site)
            processQueue()  # CMFCore's queue serves the current site's catalog
        for path in touched:
            if path in self.order:
                self.order.remove(path)
            self.order.append(path)
        if commit:
            transaction.commit()
        login(self.app, SITE_OWNER_NAME)

    def stamp(self, commit=True):
        """Modification times by the order of the last changes, an hour
        apart, the same on both sites (they are built seconds apart and
        ZCatalog's DateIndex keeps minutes, so real ones tie and differ)."""

        def change(site):
            for hour, path in enumerate(self.order):
                obj = site.unrestrictedTraverse(path, None)
                if obj is not None:
                    obj.setModificationDate(DateTime("2024/01/01 00:00 UTC") + hour / 24)
                    obj.reindexObject(idxs=["modified"])

        self.each(change, commit=commit)

    # -- what the catalogs answer -------------------------------------------

    def uids(self, site) -> dict:
        """Relative path of each UID of the site."""
        prefix = len("/".join(site.getPhysicalPath()))
        return {
            brain.UID: brain.getPath()[prefix:]
            for brain in site.portal_catalog.unrestrictedSearchResults(path="/".join(site.getPhysicalPath()))
        }

    def queries(self, site, wcs) -> dict:
        root = "/".join(site.getPhysicalPath())
        uids = {
            path: obj.UID()
            for path in ("front", "section/page", *wcs)
            if (obj := site.unrestrictedTraverse(path, None)) is not None
        }
        queries = {
            "subtree": {"path": root, "sort_on": "path"},
            "section, depth 1": {"path": {"query": root + "/section", "depth": 1}, "sort_on": "path"},
            "pages by title": {"portal_type": "Document", "sort_on": "sortable_title"},
            "pages by title, reversed": {
                "portal_type": "Document",
                "sort_on": "sortable_title",
                "sort_order": "reverse",
            },
            "newest first": {"path": root, "sort_on": "modified", "sort_order": "descending"},
            "two oldest": {"path": root, "sort_on": "modified", "sort_limit": 2},
            "working copies": {"object_provides": WC, "sort_on": "path"},
            "baselines": {"object_provides": BASELINE, "sort_on": "path"},
            "private": {"review_state": "private", "sort_on": "path"},
            "published": {"review_state": "published", "sort_on": "path"},
            "subject": {"Subject": "iterate", "sort_on": "path"},
            "subject of copies": {"Subject": "revised", "sort_on": "path"},
            "words of copies": {"SearchableText": "quokka", "sort_on": "path"},
            "words, both": {"SearchableText": "zephyr OR meadow", "sort_on": "path"},
            "words of originals": {"SearchableText": "harbor", "sort_on": "path"},
            "title": {"Title": "revised", "sort_on": "path"},
            "title, prefix": {"Title": "front*", "sort_on": "path"},
        }
        for path, uid in uids.items():
            queries[f"UID of {path}"] = {"UID": uid}
        return queries

    def answers(self, site, wcs) -> dict:
        """Each query's paths and counts as each user (None: Anonymous), the
        unrestricted records (index entries and metadata) and iterate's own
        view of each page."""
        setSite(site)
        catalog = site.portal_catalog
        uids = self.uids(site)
        found = {}
        for user in (SITE_OWNER_NAME, "alice", "bob", None, "unrestricted"):
            self.as_user(site, None if user == "unrestricted" else user)
            search = catalog.unrestrictedSearchResults if user == "unrestricted" else catalog.searchResults
            for label, query in self.queries(site, wcs).items():
                results = search(dict(query))
                paths = relpaths(site, results)
                if "sort_on" not in query:
                    paths = sorted(paths)
                elif query["sort_on"] == "sortable_title":
                    # a copy shares its original's title: ZCatalog orders a
                    # tie by its random record ids
                    titles = [brain.Title for brain in results]
                    paths = [
                        sorted(p for t, p in zip(titles, paths, strict=True) if t == title)
                        for title in dict.fromkeys(titles)
                    ]
                found[f"{user}: {label}"] = (paths, len(results), results.actual_result_count)
        login(self.app, SITE_OWNER_NAME)
        found["records"] = self.records(site, uids)
        found["iterate"] = self.iterate(site, wcs)
        return found

    def records(self, site, uids) -> dict:
        """Every record but the site's, with what differs between two sites
        built seconds apart (dates, UIDs, the site's path) normalized."""
        catalog = site.portal_catalog
        root = "/".join(site.getPhysicalPath())

        def norm(value):
            if isinstance(value, DateTime):
                return "<far future>" if value.year() > 2400 else "<date>"
            if value is Missing.Value:
                return "<missing>"
            if isinstance(value, str):
                if value in uids:
                    return f"<uid of {uids[value]}>"
                if value[:2] == "20" and value[4:5] == "-":  # an ISO date
                    return "<date>"
                if value.startswith("plone.dexterity.schema.generated."):  # names the site
                    return "<schema>"
                return value.replace(root, "<site>")
            if isinstance(value, (list, tuple)):
                return sorted((norm(v) for v in value), key=repr)
            return value

        skip = {"effectiveRange", "Date", "created", "modified", "effective", "expires"}
        found = {}
        for brain in catalog.unrestrictedSearchResults(path=root):
            if brain.getPath() == root:
                continue  # the sites themselves are made differently
            rid = brain.getRID()
            entries = {
                name: norm(catalog._catalog.getIndex(name).getEntryForObject(rid, "-"))
                for name in catalog.indexes()
                if name not in skip
            }
            metadata = {name: norm(getattr(brain, name)) for name in catalog.schema()}
            found[brain.getPath()[len(root) :]] = (entries, metadata)
        return found

    def iterate(self, site, wcs) -> dict:
        """iterate's relations and what its control view allows each user."""
        root = "/".join(site.getPhysicalPath())
        request = self.layer["request"]
        found = {}
        for path in ("front", "section/page", "section/other", *wcs):
            obj = site.unrestrictedTraverse(path, None)
            if obj is None:
                found[path] = None
                continue
            baseline, wc = policy(obj).getBaseline(), policy(obj).getWorkingCopy()
            found[path] = {
                "baseline": baseline and "/".join(baseline.getPhysicalPath())[len(root) :],
                "working copy": wc and "/".join(wc.getPhysicalPath())[len(root) :],
            }
            for user in (SITE_OWNER_NAME, "alice", "bob"):
                self.as_user(site, user)
                # cancel_allowed is memoized on the request, whoever asks
                IAnnotations(request).pop("plone.memoize", None)
                control = getMultiAdapter((obj, request), name="iterate_control")
                found[path][user] = (
                    control.checkout_allowed(),
                    control.checkin_allowed(),
                    control.cancel_allowed(),
                )
        login(self.app, SITE_OWNER_NAME)
        return found

    def same_answers(self, label, wcs=(), commit=True) -> dict:
        """The stock site's answers, after checking that ours are the same."""
        self.stamp(commit)
        ours, stock = (self.answers(site, wcs) for site in self.sites)
        self.assertEqual(sorted(ours), sorted(stock), label)
        for key in stock:
            if key == "records":
                self.assertEqual(sorted(ours[key]), sorted(stock[key]), f"{label}: {key}")
                for path in sorted(stock[key]):
                    want, have = stock[key][path], ours[key][path]
                    for part in (0, 1):
                        differ = {
                            k: (want[part].get(k), have[part].get(k))
                            for k in want[part].keys() | have[part].keys()
                            if want[part].get(k) != have[part].get(k)
                        }
                        self.assertEqual(differ, {}, f"{label}: {path} ({('indexes', 'metadata')[part]})")
            else:
                self.assertEqual(ours[key], stock[key], f"{label}: {key}")
        return stock

    # -- steps ----------------------------------------------------------------

    def checkout(self, path, user=SITE_OWNER_NAME):
        def change(site):
            obj = site.unrestrictedTraverse(path)
            policy(obj).checkout(obj.aq_parent)

        parent, _, id = path.rpartition("/")
        wc = f"{parent}/copy_of_{id}" if parent else f"copy_of_{id}"
        self.each(change, user, touched=(path, wc))
        return wc

    def submit(self, path, view, form, user, touched=()):
        """*form* posted to iterate's *view* of *path* as *user*, on both sites."""
        request = self.layer["request"]

        def change(site):
            request.form.clear()
            request.form.update(form)
            getMultiAdapter((site.unrestrictedTraverse(path), request), name=view)()
            self.assertEqual(request.response.getStatus(), 302)

        self.each(change, user, touched)
        request.form.clear()

    def edit(self, wc, user=SITE_OWNER_NAME):
        def change(site):
            obj = site.unrestrictedTraverse(wc)
            obj.title = obj.title + " revised"
            obj.text = RichTextValue("<p>zephyr quokka</p>", "text/html", "text/x-html-safe")
            obj.setSubject(("iterate", "revised"))
            obj.reindexObject()

        self.each(change, user, touched=(wc,))

    # -- tests ----------------------------------------------------------------

    def test_life_of_working_copies(self):
        answers = self.same_answers("before")
        self.assertEqual(answers["bob: words of originals"][0], ["/front"])
        self.assertEqual(
            answers["None: published"][0], ["/front", "/news", "/section", "/section/other", "/section/page"]
        )
        self.assertEqual(answers["alice: private"][0], ["/section/draft"])
        self.assertEqual(answers["iterate"]["front"][SITE_OWNER_NAME], (True, False, False))

        front = self.checkout("front")
        page = self.checkout("section/page", user="alice")
        wcs = (front, page)
        answers = self.same_answers("checked out", wcs)
        self.assertEqual(
            answers["unrestricted: private"][0], ["/copy_of_front", "/section/copy_of_page", "/section/draft"]
        )
        self.assertEqual(answers["alice: private"][0], ["/section/copy_of_page", "/section/draft"])
        self.assertEqual(answers["bob: private"][0], [])
        self.assertEqual(answers["unrestricted: UID of front"][0], ["/front"])
        self.assertEqual(answers["unrestricted: UID of copy_of_front"][0], ["/copy_of_front"])
        self.assertEqual(answers["iterate"]["front"]["working copy"], "/copy_of_front")
        self.assertEqual(answers["iterate"][page]["baseline"], "/section/page")
        self.assertEqual(answers["iterate"][page]["alice"], (False, True, True))
        # CMFCore's queue indexes the copy after iterate marked it
        self.assertEqual(answers["records"]["/copy_of_front"][1]["is_working_copy"], True)
        self.assertEqual(answers["records"]["/news"][1]["is_working_copy"], "<missing>")
        self.assertEqual(
            answers["unrestricted: working copies"][0], ["/copy_of_front", "/section/copy_of_page"]
        )
        # the baselines' partial reindex leaves their object_provides
        self.assertEqual(answers["unrestricted: baselines"][0], [])

        self.edit(front)
        self.edit(page, user="alice")
        answers = self.same_answers("edited", wcs)
        self.assertEqual(
            answers["unrestricted: words of copies"][0], ["/copy_of_front", "/section/copy_of_page"]
        )
        self.assertEqual(answers["alice: words of copies"][0], ["/section/copy_of_page"])
        self.assertEqual(answers["bob: words of copies"][0], [])
        self.assertEqual(answers["None: words, both"][0], ["/section/page"])
        self.assertEqual(
            answers["unrestricted: working copies"][0], ["/copy_of_front", "/section/copy_of_page"]
        )
        self.assertEqual(answers["records"]["/copy_of_front"][1]["is_working_copy"], True)
        self.assertEqual(
            answers["unrestricted: newest first"][0][:2], ["/section/copy_of_page", "/copy_of_front"]
        )

        self.each(lambda site: policy(site[front]).checkin("checked in"), touched=("front",), commit=False)
        self.order.remove(front)
        wcs = (page,)
        answers = self.same_answers("checked in, in its transaction", wcs, commit=False)
        self.assertEqual(answers["None: words of copies"][0], ["/front"])
        transaction.commit()
        answers = self.same_answers("checked in", wcs)
        self.assertEqual(answers["None: words of copies"][0], ["/front"])
        self.assertEqual(answers["None: title"][0], ["/front"])
        self.assertEqual(answers["unrestricted: working copies"][0], ["/section/copy_of_page"])
        self.assertEqual(answers["iterate"]["front"]["working copy"], None)

        # through iterate's forms, as in a browser
        self.submit(page, "content-cancel-checkout", {"form.button.Cancel": "Cancel"}, user="alice")
        self.order.remove(page)
        other = "section/copy_of_other"
        form = {"form.button.Checkout": "Check out", "checkout_location": "plone.app.iterate.parent"}
        self.submit("section/other", "content-checkout", form, user="alice", touched=("section/other", other))
        self.edit(other, user="alice")
        answers = self.same_answers("one cancelled, another checked out", (other,))
        self.assertEqual(answers["unrestricted: baselines"][0], [])
        self.assertEqual(answers["alice: subject of copies"][0], ["/front", "/section/copy_of_other"])
        self.assertEqual(answers["iterate"]["section/other"]["working copy"], "/section/copy_of_other")
        self.assertEqual(answers["unrestricted: words of copies"][0], ["/front", "/section/copy_of_other"])
        self.assertEqual(answers["iterate"]["section/page"][SITE_OWNER_NAME], (True, False, False))

        self.each(lambda site: site["section"].manage_delObjects(["copy_of_other"]))
        self.order.remove(other)
        answers = self.same_answers("working copy deleted")
        self.assertEqual(answers["unrestricted: words of copies"][0], ["/front"])
        self.assertEqual(answers["unrestricted: working copies"][0], [])
        self.assertEqual(answers["iterate"]["section/other"][SITE_OWNER_NAME], (True, False, False))

    def test_rebuild_with_a_working_copy(self):
        from plone.app.iterate.setuphandlers import reindex_working_copies

        front = self.checkout("front")
        page = self.checkout("section/page", user="alice")
        self.edit(page, user="alice")
        answers = self.same_answers("checked out", (front, page))
        self.assertEqual(
            answers["unrestricted: working copies"][0], ["/copy_of_front", "/section/copy_of_page"]
        )

        # iterate's upgrade step finds its working copies by a search
        self.each(lambda site: reindex_working_copies(site))
        self.same_answers("after iterate's reindex", (front, page))

        self.each(lambda site: site.portal_catalog.clearFindAndRebuild())
        answers = self.same_answers("rebuilt", (front, page))
        self.assertEqual(
            answers["unrestricted: working copies"][0], ["/copy_of_front", "/section/copy_of_page"]
        )
        self.assertEqual(answers["unrestricted: baselines"][0], ["/front", "/section/page"])
        self.assertEqual(answers["alice: words of copies"][0], ["/section/copy_of_page"])

        self.each(
            lambda site: policy(site.unrestrictedTraverse(page)).checkin("after the rebuild"),
            user="alice",
            touched=("section/page",),
        )
        self.order.remove(page)
        answers = self.same_answers("checked in after the rebuild", (front,))
        self.assertEqual(answers["None: words of copies"][0], ["/section/page"])
        self.assertEqual(answers["unrestricted: baselines"][0], ["/front"])

        # a cancel reindexes the baseline's review_state alone: ZCatalog
        # keeps the IBaseline it no longer provides
        self.each(lambda site: policy(site[front]).cancelCheckout())
        answers = self.same_answers("cancelled after the rebuild")
        self.assertEqual(answers["unrestricted: baselines"][0], ["/front"])
        self.assertEqual(answers["unrestricted: working copies"][0], [])
        self.assertEqual(answers["iterate"]["front"][SITE_OWNER_NAME], (True, False, False))
