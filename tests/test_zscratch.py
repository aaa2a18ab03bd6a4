from helpers import BothSitesTestCase, relpaths
from plone.app.testing import logout
from zope.component.hooks import setSite
from plone.pgcatalog import query as q


class Scratch(BothSitesTestCase):
    def test_scratch(self):
        for _s in self.built_sites():
            pass
        site = self.sites[0]
        setSite(site)
        logout()
        root = "/".join(site.getPhysicalPath())
        c = site.portal_catalog
        orig = c._read
        def spy(sql, params, *a, **k):
            print("SQL", sql[:2000], params)
            return orig(sql, params, *a, **k)
        c._read = spy
        print(relpaths(site, c(path=root, sort_on="path")))
        print(relpaths(site, c(**{"allowedRolesAndUsers": "Manager", "path": root, "sort_on": "path"})))
