"""The demo: a Plone site with plone.pgcatalog on http://localhost:8080.

``python -m plone.pgcatalog.demo`` (or ``scripts/demo``) stores everything
in ``var/`` (``scripts/demo``: next to the checkout, wherever it is run
from): an embedded PostgreSQL (``pgserver``) unless ``PGCATALOG_DSN`` names
a database.  The embedded server runs as long as the demo: Ctrl-C or
SIGTERM stops both.  The first run creates the site ``Plone`` with some
content; later runs reuse it.  Log in as admin / admin.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import argparse
import os
import signal
import socket
import sys


__all__ = ["SITE_ZCML", "ZOPE_CONF", "create_site", "database", "main", "port_taken"]


# A deployment's site.zcml: Plone's autoIncludePlugins loads plone.pgcatalog
SITE_ZCML = """<configure xmlns="http://namespaces.zope.org/zope"
           xmlns:meta="http://namespaces.zope.org/meta"
           xmlns:five="http://namespaces.zope.org/five">
  <include package="Zope2.App" />
  <include package="Products.Five" />
  <meta:redefinePermission from="zope2.Public" to="zope.Public" />
  <five:loadProducts file="meta.zcml"/>
  <five:loadProducts />
  <five:loadProductsOverrides />
  <securityPolicy component="AccessControl.security.SecurityPolicy" />
</configure>
"""

ZOPE_CONF = """%define INSTANCE {var}
instancehome $INSTANCE
clienthome $INSTANCE
debug-mode off
security-policy-implementation C
verbose-security off
default-zpublisher-encoding utf-8
<environment>
    zope_i18n_compile_mo_files true
</environment>
%import zodb_pgjsonb
<zodb_db main>
    cache-size 30000
    <pgjsonb>
        dsn {dsn}
    </pgjsonb>
    mount-point /
</zodb_db>
"""

DEMO_CONTENT = [
    ("Folder", "pgcatalog-news", "Catalog news", "What happened lately", ""),
    (
        "News Item",
        "pgcatalog-news/catalog-on-postgresql",
        "The catalog moved to PostgreSQL",
        "Searches run as SQL",
        "<p>Every search of this site is one SQL statement over the catalog rows, written in the same "
        "PostgreSQL transaction as the content they describe. Misspell a word in a search and the "
        "search page asks: did you mean the word this site has?</p>",
    ),
    (
        "News Item",
        "pgcatalog-news/faster-listings",
        "Faster listings",
        "Metadata is loaded only for what is shown",
        "<p>A listing reads the metadata of the page it shows, never of the whole result. Each result "
        "of a search shows a snippet: the words found, marked, in the text around them.</p>",
    ),
    ("Folder", "pgcatalog-docs", "Documentation", "How to use plone.pgcatalog", ""),
    (
        "Document",
        "pgcatalog-docs/install",
        "Install",
        "One GenericSetup profile replaces portal_catalog",
        "<p>Install the profile in the Add-ons panel: the catalog's columns and indexes are made in "
        "PostgreSQL and every item is cataloged again. Uninstall puts a stock catalog back.</p>",
    ),
    (
        "Document",
        "pgcatalog-docs/queries",
        "Queries",
        "Every ZCatalog query form becomes one SQL statement",
        "<p>Field, keyword, date, path and text indexes answer as ZCatalog answers, in its order. The "
        "filters of the search page count what each choice would find, in one statement.</p>",
    ),
    (
        "Document",
        "pgcatalog-docs/facets",
        "Facet counts",
        "How many items each filter finds",
        "<p>Volto's search block and the classic search page show, beside each filter, how many "
        "items it would find: counted by PostgreSQL with the security of the search.</p>",
    ),
    ("Event", "events-demo", "Catalog sprint", "A week of indexes and queries", ""),
]
"""``(type, path, title, description, text)`` of the demo's content."""


@contextmanager
def database(var: Path) -> Iterator[str]:
    """The DSN of ``PGCATALOG_DSN``, or of an embedded PostgreSQL in
    ``var/pgdata`` that is stopped when the block ends."""
    dsn = os.environ.get("PGCATALOG_DSN")
    if dsn:
        yield dsn
        return
    import pgserver

    with pgserver.get_server(var / "pgdata", cleanup_mode="stop") as server:
        yield server.get_uri()


def port_taken(host: str, port: int) -> bool:
    """Whether something already listens on *host*:*port*."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds like Ctrl-C: the embedded server stops


def create_site(app: Any) -> None:
    from plone import api
    from plone.app.textfield.value import RichTextValue
    from Products.CMFPlone.factory import addPloneSite
    from zope.component.hooks import setSite

    import transaction

    if "admin" not in app.acl_users.getUserNames():
        app.acl_users._doAddUser("admin", "admin", ["Manager"], [])
    if "Plone" in app.objectIds():
        return
    from AccessControl.SecurityManagement import newSecurityManager

    newSecurityManager(None, app.acl_users.getUser("admin").__of__(app.acl_users))
    site = addPloneSite(
        app,
        "Plone",
        title="plone.pgcatalog demo",
        setup_content=True,
        default_language="en",
        extension_ids=(
            "plone.app.contenttypes:default",
            "plone.app.contenttypes:plone-content",
            "plonetheme.barceloneta:default",
            "plone.restapi:default",  # @search, @facet-count and @suggestions for everybody
            "plone.pgcatalog:default",
        ),
    )
    setSite(site)
    for portal_type, path, title, description, text in DEMO_CONTENT:
        parent_path, _, obj_id = path.rpartition("/")
        parent = site.unrestrictedTraverse(parent_path) if parent_path else site
        fields = {"text": RichTextValue(text, "text/html", "text/x-html-safe")} if text else {}
        obj = api.content.create(
            container=parent, type=portal_type, id=obj_id, title=title, description=description, **fields
        )
        api.content.transition(obj=obj, transition="publish")
    transaction.commit()
    print(f"Created the site with {len(site.portal_catalog)} cataloged items.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--var", default=os.environ.get("PGCATALOG_VAR", "var"))
    parser.add_argument("--setup-only", action="store_true", help="create the site, do not serve")
    args = parser.parse_args(argv)
    if not args.setup_only and port_taken(args.host, args.port):
        print(
            f"Port {args.port} on {args.host} is taken (another demo still running?): "
            "stop it, or choose another with --port.",
            file=sys.stderr,
        )
        return 2

    var = Path(args.var).resolve()
    var.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        with database(var) as dsn:
            return _run(args, var, dsn)
    except KeyboardInterrupt:
        print("Stopped.")
        return 0


def _run(args: argparse.Namespace, var: Path, dsn: str) -> int:
    (var / "etc").mkdir(exist_ok=True)
    (var / "etc" / "site.zcml").write_text(SITE_ZCML)
    conf = var / "zope.conf"
    conf.write_text(ZOPE_CONF.format(var=var, dsn=dsn))

    from Zope2.Startup.run import make_wsgi_app

    import Zope2

    wsgi_app = make_wsgi_app({}, str(conf))
    import transaction
    from Testing.makerequest import makerequest
    from zope.globalrequest import setRequest

    app = makerequest(Zope2.app())
    setRequest(app.REQUEST)
    try:
        create_site(app)
    finally:
        transaction.abort()
        setRequest(None)
        app._p_jar.close()
    if args.setup_only:
        return 0
    import waitress

    print(f"Serving http://localhost:{args.port}/Plone (admin / admin)")
    print(f"Try http://localhost:{args.port}/Plone/@@search?SearchableText=postgress")
    waitress.serve(wsgi_app, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
