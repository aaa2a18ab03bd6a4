"""Zope for one backend: its zope.conf, startup, the Plone site, the content.

Backends:

- ``pgcatalog``: plone.pgcatalog on zodb-pgjsonb;
- ``relstorage``: stock ZCatalog on RelStorage (history-free, PostgreSQL);
- ``filestorage``: stock ZCatalog on FileStorage;
- ``peer``: the published PyPI ``plone-pgcatalog`` (other authors, the same
  import name ``plone.pgcatalog``) on zodb-pgjsonb, run from its own venv
  (``run.py``'s ``peer_python``): loaded by Plone's autoinclude and
  installed by its ``plone.pgcatalog:default`` profile, as its README says.

All use a ZODB cache of 400 objects, as the issue asks.
"""

from __future__ import annotations

from DateTime import DateTime
from pathlib import Path
from typing import Any
from workload import doc_spec
from workload import DocSpec
from workload import edited_texts
from workload import SITE_ID
from workload import TRANSITIONS

import transaction


BACKENDS = ("pgcatalog", "relstorage", "filestorage", "peer")
CACHE_SIZE = 400
MANAGER = "admin"

SITE_ZCML = """<configure xmlns="http://namespaces.zope.org/zope"
           xmlns:meta="http://namespaces.zope.org/meta"
           xmlns:five="http://namespaces.zope.org/five">
  <include package="Zope2.App" />
  <include package="Products.Five" />
  <meta:redefinePermission from="zope2.Public" to="zope.Public" />
  <five:loadProducts file="meta.zcml"/>
  <five:loadProducts />
  <five:loadProductsOverrides />
  {extra}
  <securityPolicy component="AccessControl.security.SecurityPolicy" />
</configure>
"""

ZOPE_CONF = """%define INSTANCE {home}
instancehome $INSTANCE
clienthome $INSTANCE
debug-mode off
security-policy-implementation C
verbose-security off
default-zpublisher-encoding utf-8
{imports}
<zodb_db main>
    cache-size {cache_size}
{storage}
    mount-point /
</zodb_db>
"""

PGJSONB = """    <pgjsonb>
        dsn {dsn}
        cache-warm-pct 0
    </pgjsonb>"""

STORAGES = {
    "pgcatalog": PGJSONB,
    "peer": PGJSONB,
    "relstorage": """    <relstorage>
        keep-history false
        <postgresql>
            dsn {dsn}
        </postgresql>
    </relstorage>""",
    "filestorage": """    <filestorage>
        path {home}/Data.fs
    </filestorage>""",
}

IMPORTS = {
    "pgcatalog": "%import zodb_pgjsonb",
    "peer": "%import zodb_pgjsonb",
    "relstorage": "%import relstorage",
    "filestorage": "",
}

BASE_DATE = DateTime("2021/01/01 09:00:00 UTC")


def write_config(backend: str, home: Path, dsn: str | None) -> Path:
    """Write ``zope.conf`` and ``etc/site.zcml`` for *backend* under *home*."""
    (home / "etc").mkdir(parents=True, exist_ok=True)
    extra = '<include package="plone.pgcatalog" />' if backend == "pgcatalog" else ""
    (home / "etc" / "site.zcml").write_text(SITE_ZCML.format(extra=extra))
    storage = STORAGES[backend].format(dsn=dsn, home=home)
    conf = home / "zope.conf"
    conf.write_text(
        ZOPE_CONF.format(home=home, imports=IMPORTS[backend], cache_size=CACHE_SIZE, storage=storage)
    )
    return conf


def start_zope(conf: Path, peer: bool = False) -> Any:
    """Start Zope from *conf*; return the root application, wrapped in a
    request (the global request too) and logged in as a Manager.  The
    *peer* registers its state processor itself, when the database opens."""
    from Testing.makerequest import makerequest
    from zope.globalrequest import setRequest
    from Zope2.Startup.run import make_wsgi_app

    import Zope2

    make_wsgi_app({}, str(conf))
    app = makerequest(Zope2.app())
    setRequest(app.REQUEST)
    storage = app._p_jar.db().storage
    if hasattr(storage, "register_state_processor") and not peer:
        from plone.pgcatalog.processor import ensure_processor

        ensure_processor(storage)
    if MANAGER not in app.acl_users.getUserNames():
        app.acl_users._doAddUser(MANAGER, MANAGER, ["Manager"], [])
        transaction.commit()
    login(app)
    return app


def login(app) -> None:
    from AccessControl.SecurityManagement import newSecurityManager

    newSecurityManager(None, app.acl_users.getUser(MANAGER).__of__(app.acl_users))


def create_site(app, backend: str) -> Any:
    """Add the Plone site (and commit); pgcatalog and the peer get their
    profile (both are ``plone.pgcatalog:default``)."""
    from Products.CMFPlone.factory import addPloneSite
    from zope.component.hooks import setSite

    profiles = ["plone.app.contenttypes:default"]
    if backend in ("pgcatalog", "peer"):
        profiles.append("plone.pgcatalog:default")
    site = addPloneSite(
        app, SITE_ID, title="Benchmark", setup_content=False, default_language="en",
        extension_ids=tuple(profiles),
    )  # fmt: skip
    transaction.commit()
    setSite(site)
    return site


def open_site(app) -> Any:
    """The site a kept database already holds (``kept.py``)."""
    from zope.component.hooks import setSite

    site = app[SITE_ID]
    setSite(site)
    return site


def documents(site) -> int:
    """How many of the benchmark's documents *site* holds (added in
    order, so also the number of the next one)."""
    ids = {"query": ("doc-", "doc."), "range": "min:max"}  # not other benchmarks' pages
    return len(site.portal_catalog.unrestrictedSearchResults(portal_type="Document", getId=ids))


def folder_for(site, name: str):
    """The document's folder, created and published when first needed."""
    if not site.hasObject(name):
        site.invokeFactory("Folder", name, title=f"Section {name.split('-')[-1]}")
        site.portal_workflow.doActionFor(site[name], "publish")
    return site[name]


def add_document(site, spec: DocSpec) -> None:
    """Create one Document through ``invokeFactory`` and the workflow."""
    folder = folder_for(site, spec.folder)
    folder.invokeFactory(
        "Document", spec.id, title=spec.title, description=spec.description, subject=spec.subjects
    )
    doc = folder[spec.id]
    effective = BASE_DATE + spec.effective_day
    doc.setEffectiveDate(effective)
    doc.creation_date = effective
    doc.setModificationDate(BASE_DATE + spec.modified_day)
    workflow = site.portal_workflow
    for name in TRANSITIONS[spec.state]:
        workflow.doActionFor(doc, name)


def edit_document(site, number: int) -> None:
    """Change the title and description, then ``reindexObject()``."""
    spec = doc_spec(number)
    doc = site[spec.folder][spec.id]
    doc.title, doc.description = edited_texts(number)
    doc.reindexObject()
