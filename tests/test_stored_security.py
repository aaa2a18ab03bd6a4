"""Stored security after moves, renames, sharing and workflow in any order.

Each test builds, on both sites, four copies of one tree (a private folder
``c`` three levels deep, five items below it; a destination ``x`` shared
differently) and changes each copy in one of four ways: the move first or
the security change first, in one transaction or in two.  After each step
and after each commit, what every user finds (by path and by a word) is
compared with what that user may really see (the objects' own
permissions, checked one by one) and with the stock ZCatalog site.

plone.app.discussion's moved handler searches while a move goes on, which
runs CMFCore's indexing queue half way and hides the fault the tests are
about; :class:`QuietMovesTest` runs the same cases without it.  There
stock ZCatalog keeps records at the old paths (docs/reference.md, "Known
differences"), so only the permissions are the reference.
"""

from AccessControl.PermissionRole import rolesForPermissionOn
from helpers import BothSitesTestCase
from importlib.metadata import version
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.protect.authenticator import createToken
from plone.testing.zope import Browser
from Products.CMFCore.indexing import processQueue
from test_moves import without_searches_during_moves
from zope.annotation.interfaces import IAnnotations
from zope.component.hooks import setSite
from zope.event import notify
from ZPublisher.pubevents import PubBeforeCommit

from urllib.parse import urlencode

import json
import transaction


# the permission CMFPlone's allowedRolesAndUsers reads
PERMISSION = "Access contents information" if version("Products.CMFPlone") >= "6.2" else "View"
USERS = ("alice", "bob", "carol")
VARIANTS = ("move-first", "security-first", "move-then-commit", "security-then-commit")


def tree(site, name):
    """``name/a/b/c`` (private, alice may read it) with five items below;
    ``name/x`` (bob may read it, and b) and ``name/pub`` (published)."""
    top = api.content.create(container=site, type="Folder", id=name, title=name)
    a = api.content.create(container=top, type="Folder", id="a", title="A")
    b = api.content.create(container=a, type="Folder", id="b", title="B")
    c = api.content.create(container=b, type="Folder", id="c", title="Quince folder")
    for i in range(3):
        api.content.create(container=c, type="Document", id=f"d{i}", title=f"Quince {i}")
    sub = api.content.create(container=c, type="Folder", id="sub", title="Quince sub")
    api.content.create(container=sub, type="Document", id="deep", title="Quince deep")
    x = api.content.create(container=top, type="Folder", id="x", title="X")
    pub = api.content.create(container=top, type="Folder", id="pub", title="Pub")
    api.content.transition(obj=pub, transition="publish")
    api.content.transition(obj=c["d0"], transition="publish")
    for folder, user in ((c, "alice"), (x, "bob"), (b, "bob")):
        folder.manage_setLocalRoles(user, ["Reader"])
        folder.reindexObjectSecurity()


# The moves: each takes the tree's top folder and returns the folder moved.


def api_move(top):
    api.content.move(source=top["a"]["b"]["c"], target=top["x"])
    return top["x"]["c"]


def cut_paste(top):
    top["x"].manage_pasteObjects(top["a"]["b"].manage_cutObjects(["c"]))
    return top["x"]["c"]


def rename(top):
    top["a"]["b"].manage_renameObject("c", "c2")
    return top["a"]["b"]["c2"]


def api_rename(top):
    api.content.rename(obj=top["a"]["b"]["c"], new_id="c3")
    return top["a"]["b"]["c3"]


MOVES = (api_move, cut_paste, rename, api_rename)


# The security changes, on the folder (where it is when they run).


def grant(folder):
    folder.manage_setLocalRoles("carol", ["Reader"])
    folder.reindexObjectSecurity()


def revoke(folder):
    folder.manage_delLocalRoles(["alice"])
    folder.reindexObjectSecurity()


def block(folder):
    # what @@sharing does when "inherit permissions" is unticked
    folder.__ac_local_roles_block__ = True
    folder.reindexObjectSecurity()


def publish(folder):
    api.content.transition(obj=folder, transition="publish")


def parent_grant(folder):
    parent = folder.aq_parent
    parent.manage_setLocalRoles("carol", ["Reader"])
    parent.reindexObjectSecurity()


SECURITY = (grant, revoke, block, publish, parent_grant)


def folder_of(top):
    """The folder ``c`` wherever it is now."""
    for path in (("a", "b", "c"), ("a", "b", "c2"), ("a", "b", "c3"), ("x", "c")):
        found = top.unrestrictedTraverse("/".join(path), None)
        if found is not None:
            return found
    raise LookupError(top)


class TreesTestCase(BothSitesTestCase):
    """Both sites with the trees of :data:`VARIANTS`, and the checks."""

    maxDiff = None
    quiet = False  # True: without plone.app.discussion's moved handler (see module)

    def setUp(self):
        super().setUp()
        if self.quiet:
            without_searches_during_moves(self)
        for site in self.sites:
            setSite(site)
            site.portal_workflow.setChainForPortalTypes(("Document", "Folder"), "simple_publication_workflow")
            for user in USERS:
                api.user.create(email=f"{user}@example.org", username=user, password=f"secret-{user}-1")
            for variant in VARIANTS:
                tree(site, variant)
            transaction.commit()

    def found(self, site, user: str | None) -> dict:
        """What *user* (None: Anonymous) finds of the trees, by path and by word."""
        setSite(site)
        root = "/".join(site.getPhysicalPath())
        catalog = site.portal_catalog

        def search(**query):
            paths = (b.getPath()[len(root) :] for b in catalog(**query))
            return sorted(p for p in paths if p.split("/")[1:2] and p.split("/")[1] in VARIANTS)

        if user is None:
            logout()
        elif user != SITE_OWNER_NAME:
            login(site, user)
        try:
            return {"path": search(path=root), "word": search(SearchableText="quince")}
        finally:
            login(self.layer["app"], SITE_OWNER_NAME)

    def allowed(self, site, user: str | None) -> dict:
        """What *user* may see: each object's own permission, checked."""
        setSite(site)  # where plone.api finds the user
        root = "/".join(site.getPhysicalPath())
        paths, words = [], []
        # borg.localrole remembers a user's local roles on the request
        cached = IAnnotations(self.layer["request"])
        for key in [k for k in cached if isinstance(k, str) and k.startswith("borg.localrole.")]:
            del cached[key]
        for variant in VARIANTS:
            for obj in _walk(site[variant]):
                roles = rolesForPermissionOn(PERMISSION, obj)
                if user is None:
                    ok = "Anonymous" in roles
                elif user == SITE_OWNER_NAME:
                    ok = True  # Manager sees everything
                else:
                    ok = api.user.has_permission(PERMISSION, username=user, obj=obj)
                if ok:
                    path = "/".join(obj.getPhysicalPath())[len(root) :]
                    paths.append(path)
                    if "quince" in obj.Title().lower():
                        words.append(path)
        return {"path": sorted(paths), "word": sorted(words)}

    def check(self, label):
        pg, stock = self.sites
        for user in (None, *USERS, SITE_OWNER_NAME):
            who = f"{label}: {user or 'Anonymous'}"
            got = self.found(pg, user)
            assertSameFound(self, got, self.allowed(pg, user), who)
            if not self.quiet:
                assertSameFound(self, self.found(stock, user), got, who + ", stock ZCatalog")


class StoredSecurityTest(TreesTestCase):
    """Every move with every security change, in the four orders."""

    def steps(self, site, move, change, variant):
        """Run *variant*'s steps on *site*; True where it commits between."""
        top = site[variant]
        if variant.startswith("move"):
            move(top)
            return variant.endswith("commit"), lambda: change(folder_of(top))
        change(folder_of(top))
        return variant.endswith("commit"), lambda: move(top)

    def run_case(self, move, change):
        """*move* and *change* on each copy of the tree (see VARIANTS)."""
        login(self.layer["app"], SITE_OWNER_NAME)
        second = {}
        for site in self.sites:
            setSite(site)
            for variant in VARIANTS:
                commit, step = self.steps(site, move, change, variant)
                if commit:
                    second[site, variant] = step
                else:
                    step()
            # CMFCore's queue serves the current site's catalog
            processQueue()
        self.check("in the transaction")
        transaction.commit()
        self.check("committed")
        for (site, _), step in second.items():
            setSite(site)
            step()
            processQueue()
        self.check("in the second transaction")
        transaction.commit()
        self.check("the second transaction committed")


def assertSameFound(test, got: dict, want: dict, label: str) -> None:
    """The paths each way of searching found: none missing, none extra."""
    for how in want:
        missing = sorted(set(want[how]) - set(got[how]))
        extra = sorted(set(got[how]) - set(want[how]))
        test.assertEqual((missing, extra), ([], []), f"{label}, by {how}: (missing, extra)")


def _walk(obj):
    yield obj
    for child in obj.objectValues():
        if callable(getattr(child, "reindexObject", None)):
            yield from _walk(child)


class QuietMovesTest(StoredSecurityTest):
    quiet = True


class OtherPathsTest(TreesTestCase):
    """Nested moves, a move into a folder shared otherwise, and a copy of a
    private subtree."""

    def changed(self, change) -> None:
        """*change*(top) on every tree of both sites, in one transaction,
        checked in it and after its commit."""
        for site in self.sites:
            setSite(site)
            for variant in VARIANTS:
                change(site[variant])
            processQueue()  # CMFCore's queue serves the current site's catalog
        self.check("in the transaction")
        transaction.commit()
        self.check("committed")

    def test_a_folder_then_its_child_moved(self):
        def change(top):
            api.content.move(source=top["a"]["b"]["c"], target=top["x"])
            api.content.move(source=top["x"]["c"]["sub"], target=top["pub"])
            revoke(top["pub"]["sub"])
            grant(top["x"]["c"])

        self.changed(change)

    def test_moved_into_a_folder_shared_otherwise(self):
        """bob may read ``b``, not ``pub``: moved there, ``c`` is his no more."""
        self.changed(lambda top: api.content.move(source=top["a"]["b"]["c"], target=top["pub"]))

    def test_a_private_subtree_copied_into_a_public_folder(self):
        def change(top):
            top["pub"].manage_pasteObjects(top["a"]["b"].manage_copyObjects(["c"]))
            block(top["pub"]["c"])

        self.changed(change)


class QuietOtherPathsTest(OtherPathsTest):
    quiet = True


class SettingsAloneTest(TreesTestCase):
    """Local roles changed without ``reindexObjectSecurity``, in a request:
    stock ZCatalog keeps the old terms (a script's mistake); here the
    request's commit finds the changed settings and the rows follow the
    objects."""

    quiet = True  # stock ZCatalog is stale here, as the script left it

    def test_local_roles_changed_alone(self):
        for site in self.sites:
            setSite(site)
            for variant in VARIANTS:
                c = site[variant]["a"]["b"]["c"]
                c.manage_delLocalRoles(["alice"])
                c.manage_setLocalRoles("carol", ["Reader"])
                site[variant]["a"].__ac_local_roles_block__ = True
            notify(PubBeforeCommit(self.layer["request"]))  # as the publisher does
            transaction.commit()
        self.check("committed")


def _case(move, change):
    def test(self):
        self.run_case(move, change)

    test.__name__ = f"test_{move.__name__}_and_{change.__name__}"
    return test


# Without plone.app.discussion's handler every move is run with every
# change; with it (against stock ZCatalog) the two OFS paths suffice:
# plone.api's move is a cut and paste, its rename a manage_renameObject.
for _move in MOVES:
    for _change in SECURITY:
        _test = _case(_move, _change)
        setattr(QuietMovesTest, _test.__name__, _test)
        if _move in (api_move, api_rename):
            setattr(StoredSecurityTest, _test.__name__, _test)


class OverTheWebTest(TreesTestCase):
    """Folder contents' cut, paste and rename and the sharing form, as a
    Manager's browser sends them through Zope's publisher, one request a
    transaction; after each, what everyone finds is checked."""

    def setUp(self):
        super().setUp()
        self.browser = Browser(self.layer["app"])
        self.browser.handleErrors = False
        self.browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")

    def post(self, url: str, fields: list[tuple[str, str]]) -> None:
        login(self.layer["app"], SITE_OWNER_NAME)
        fields = [*fields, ("_authenticator", createToken())]
        self.browser.post(url, urlencode(fields))
        self.layer["app"]._p_jar.sync()

    def test_cut_paste_rename_and_sharing(self):
        for site in self.sites:
            setSite(site)
            url, top = site.absolute_url(), site["move-first"]
            uid = top["a"]["b"]["c"].UID()
            self.post(
                f"{url}/move-first/a/b/@@fc-cut",
                [("selection", json.dumps([uid])), ("folder", "/move-first/a/b")],
            )
            self.post(f"{url}/move-first/x/@@fc-paste", [("folder", "/move-first/x")])
            self.assertIn("c", site["move-first"]["x"].objectIds())
            # the sharing form: alice's role revoked, carol's granted, not inherited
            sharing = [("form.submitted", "1"), ("form.button.Save", "Save")]
            for user, roles in (("alice", []), ("carol", ["Reader"])):
                sharing += [("entries.id:records", user), ("entries.type:records", "user")]
                sharing += [(f"entries.role_{role}:records", "on") for role in roles]
            self.post(f"{url}/move-first/x/c/@@sharing", sharing)
            self.assertTrue(site["move-first"]["x"]["c"].__ac_local_roles_block__)
            self.post(
                f"{url}/move-first/x/@@fc-rename",
                [("UID_0", uid), ("newid_0", "renamed"), ("newtitle_0", "Quince renamed")],
            )
            self.assertIn("renamed", site["move-first"]["x"].objectIds())
        self.check("over the web")
        # and as the users' own browsers search
        allowed = {
            (site, user): self.allowed(site, user)["word"] for site in self.sites for user in (None, *USERS)
        }
        for user in (None, *USERS):
            browser = Browser(self.layer["app"])
            browser.addHeader("Accept", "application/json")
            if user is not None:
                browser.addHeader("Authorization", f"Basic {user}:secret-{user}-1")
            for site in self.sites:
                root = site.absolute_url()
                browser.open(f"{root}/@search?SearchableText=quince&b_size=100")
                found = sorted(item["@id"][len(root) :] for item in json.loads(browser.contents)["items"])
                self.assertEqual(
                    found, allowed[site, user], f"{site.getId()}: {user or 'Anonymous'} over the web"
                )
