"""Security terms exactly as Plone's CatalogTool adds them, against ZCatalog.

``allowedRolesAndUsers`` from the user's roles, groups and local roles
(granted to the user or to one of their groups); ``effectiveRange`` unless
``show_inactive`` says otherwise or the user may access inactive content
(site-wide, or on every path searched); ``unrestrictedSearchResults``
without either.  The content has pages whose effective date lies ahead and
pages that have expired.
"""

from helpers import BothSitesTestCase
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from test_differential import outcome

import transaction


USERS = {
    "bob": {"groups": ["readers"]},  # Reader on item-005 through his group
    "carol": {"local": ("item-020", ["Owner"])},  # may see inactive content there
    "dave": {"roles": ["Site Administrator"]},  # may see inactive content everywhere
    "erin": {},  # a plain Member
}


def queries(root: str) -> list[dict]:
    return [
        {"path": root},
        {"path": root, "show_inactive": True},
        {"path": root, "show_inactive": False},
        {"path": root + "/item-005"},
        {"path": root + "/item-020"},
        {"path": root + "/item-020", "show_inactive": False},
        {"path": [root + "/item-005", root + "/item-020"]},
        {"review_state": "private"},
        {"portal_type": "Folder", "show_inactive": True},
    ]


class SecurityTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        for site in self.built_sites():
            api.group.create(groupname="readers")
            api.group.grant_roles(groupname="readers", obj=site["item-005"], roles=["Reader"])
            site["item-005"].reindexObjectSecurity()
            for name, how in USERS.items():
                api.user.create(
                    email=f"{name}@example.org",
                    username=name,
                    password="secret-secret",
                    roles=how.get("roles", ["Member"]),
                )
                for group in how.get("groups", ()):
                    api.group.add_user(groupname=group, username=name)
                if "local" in how:
                    path, roles = how["local"]
                    api.user.grant_roles(username=name, obj=site[path], roles=roles)
                    site[path].reindexObjectSecurity()
            transaction.commit()

    def compare(self, label: str, log_in, unrestricted: bool = False) -> int:
        pg, z = self.sites
        found = 0
        for zq, pq in zip(
            queries("/".join(z.getPhysicalPath())), queries("/".join(pg.getPhysicalPath())), strict=True
        ):
            zq, pq = {**zq, "sort_on": "path"}, {**pq, "sort_on": "path"}
            log_in(z)
            expected = outcome(z, zq, unrestricted)
            log_in(pg)
            got = outcome(pg, pq, unrestricted)
            self.assertEqual(expected, got, f"{label}: {zq!r}")
            self.assertEqual(expected[0], "ok", f"{label}: {zq!r}")
            found += expected[2]
        return found

    def test_each_user_sees_what_zcatalog_shows_them(self):
        seen = {}
        for name in USERS:
            seen[name] = self.compare(name, lambda site, name=name: login(site, name))
        seen["anonymous"] = self.compare("anonymous", lambda site: logout())
        seen["manager"] = self.compare("manager", lambda site: login(site.aq_parent, SITE_OWNER_NAME))
        seen["unrestricted"] = self.compare("unrestricted", lambda site: logout(), unrestricted=True)
        # a group's local role, an Owner's local role and a site role each
        # show more than a plain Member sees (who sees what Anonymous sees);
        # the terms hide something even from a Manager
        self.assertEqual(seen["erin"], seen["anonymous"])
        for name in ("bob", "carol", "dave"):
            self.assertGreater(seen[name], seen["erin"], seen)
        self.assertLess(seen["manager"], seen["unrestricted"], seen)
