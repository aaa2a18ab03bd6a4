"""Least privilege: a site installed by the owner of the tables runs as a
role that owns nothing, with exactly the grants the reference documents
(``plone.pgcatalog.privileges.RUNTIME_GRANTS``).

Each test creates a login role of its own (the server is shared: unique
name, dropped at the end), grants it, and opens a second ZODB on the
layer's database as that role; searches and content changes go through
that ZODB.  The layer's site (the owner's connection) checks the result.
"""

from __future__ import annotations

from helpers import CatalogTestCase
from helpers import Extra
from plone import api
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import replicas
from plone.pgcatalog.pools import close_pools
from plone.pgcatalog.pools import held_connection
from plone.pgcatalog.connection import READ_DSN_ENV
from plone.pgcatalog.pools import release_request_connection
from plone.pgcatalog.errors import SchemaPrivilegeError
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.privileges import grant_runtime_role
from plone.pgcatalog.privileges import grant_search_role
from plone.pgcatalog.privileges import require_schema_owner
from plone.pgcatalog.privileges import schema_owner
from Acquisition import aq_base
from dataclasses import replace
from plone.pgcatalog.exportimport import reconfigure_index
from plone.pgcatalog.registry import index_defs
from plone.pgcatalog.registry import IndexDef
from plone.pgcatalog.uninstall import uninstall
from plone.pgcatalog.registry import FIELD
from plone.pgcatalog.registry import TEXT_VALUE
from plone.pgcatalog.schema import index_ddl
from plone.pgcatalog.setuphandlers import upgrade
from plone.pgcatalog.testing import open_pg_db
from plone.pgcatalog.verify import verify
from Products.ZCatalog.ZCatalog import CatalogError
from psycopg import conninfo
from psycopg import sql
from Testing.makerequest import makerequest
from unittest import mock
from zope.component.hooks import getSite
from zope.component.hooks import setSite
from zope.globalrequest import getRequest
from zope.globalrequest import setRequest

import os
import psycopg
import transaction
import uuid


def create_role(owner_dsn: str, prefix: str) -> str:
    """A new login role with a unique name (the server is shared)."""
    role = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    return role


def drop_role(owner_dsn: str, role: str) -> None:
    """End the role's sessions, revoke its grants and drop it."""
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [role])
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


class RuntimeRoleTestCase(CatalogTestCase):
    """The layer's site, installed by the owner, opened as a run-time role:
    ``self.site`` and ``self.role_catalog`` are that role's, ``self.portal``
    and ``self.catalog`` the owner's."""

    def setUp(self):
        super().setUp()
        self.portal.portal_workflow.setChainForPortalTypes(
            ("Document", "Folder"), "simple_publication_workflow"
        )
        self.owner_content()
        transaction.commit()
        self.owner_dsn = self.layer["pg_dsn"]
        self.role = create_role(self.owner_dsn, "pgcatalog_run")
        self.addCleanup(drop_role, self.owner_dsn, self.role)
        with psycopg.connect(self.owner_dsn, autocommit=True) as conn:
            self.granted = grant_runtime_role(conn, self.role)
        self.dsn = conninfo.make_conninfo(self.owner_dsn, user=self.role)
        with self.assertNoLogs("zodb_pgjsonb", level="WARNING"):
            self.db = open_pg_db(self.dsn)  # the storage's startup, as the role
        self.addCleanup(self.db.close)
        self.addCleanup(close_pools)
        request = getRequest()
        self.addCleanup(setRequest, request)
        self.addCleanup(setSite, getSite())
        self.addCleanup(transaction.abort)  # before the role's connection closes
        conn = self.db.open()
        self.addCleanup(conn.close)
        app = makerequest(conn.root()["Application"])
        setRequest(app.REQUEST)
        self.site = app["plone"]
        setSite(self.site)
        login(app, SITE_OWNER_NAME)
        self.role_catalog = self.site.portal_catalog

    def owner_content(self) -> None:
        """Content the owner's site makes before the role's opens."""

    def owner_rows(self, sql_text: str, params: list | tuple = ()) -> list[tuple]:
        with psycopg.connect(self.owner_dsn) as conn:
            return conn.execute(sql_text, params).fetchall()

    def row(self, path: str) -> tuple | None:
        """The committed catalog row at *path*: (zoid, cataloged, has
        words, metadata), as the owner reads it."""
        rows = self.owner_rows(
            "SELECT zoid, idx IS NOT NULL, searchable_text IS NOT NULL, meta FROM object_state "
            "WHERE path = %s AND idx IS NOT NULL",
            [path],
        )
        return rows[0] if rows else None

    def counter(self) -> int:
        return self.owner_rows("SELECT value FROM pgcatalog_counter WHERE id = 1")[0][0]


class RoleTest(RuntimeRoleTestCase):
    def test_the_role_owns_nothing(self):
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            may, owner, role = schema_owner(conn)
            self.assertFalse(may)
            self.assertEqual(role, self.role)
            self.assertNotEqual(owner, self.role)
            (owned,) = conn.execute(
                "SELECT count(*) FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
            ).fetchone()
            self.assertEqual(owned, 0)
            # and can do none of what only the owner may
            with self.assertRaises(psycopg.errors.InsufficientPrivilege):
                conn.execute("CREATE INDEX IF NOT EXISTS pgcatalog_path ON object_state (path)")
        with psycopg.connect(self.owner_dsn, autocommit=True) as conn:
            self.assertTrue(schema_owner(conn)[0])
        self.assertIn(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON transaction_log, object_state, blob_state", self.granted
        )


class SearchTest(RuntimeRoleTestCase):
    def owner_content(self):
        folder = api.content.create(container=self.portal, type="Folder", id="lp", title="Least privilege")
        for i, text in enumerate(("river stone river", "river forest", "stone cloud")):
            api.content.create(container=folder, type="Document", id=f"d{i}", title=f"Doc {i} {text}")
        api.content.transition(obj=folder["d1"], transition="publish")
        api.user.create(
            email="m@example.org", username="member", password="member-secret-1", roles=["Member"]
        )

    def queries(self) -> list[dict]:
        return [
            {"portal_type": "Document", "path": "/plone/lp", "sort_on": "id"},
            {"SearchableText": "river"},  # relevance order: pgcatalog_okapi, text statistics
            {"SearchableText": "riv* AND sto*"},  # globs: the lexicon (pgcatalog_words)
            {"SearchableText": "riv* OR clo*"},
            {"review_state": "published", "path": {"query": "/plone/lp", "depth": 1}},
            {"Title": "stone", "sort_on": "sortable_title", "sort_order": "reverse"},
            {"path": {"query": "/plone/lp", "depth": 1}, "sort_on": "getObjPositionInParent", "b_size": 2},
        ]

    def paths(self, catalog) -> list[list[str]]:
        return [[brain.getPath() for brain in catalog.searchResults(**query)] for query in self.queries()]

    def additions(self, catalog) -> list:
        """Facet counts, "did you mean" and snippets, as a Member sees them
        (the security terms apply) and as the site owner."""
        found = []
        for user in ("member", SITE_OWNER_NAME):
            login(self.site if user == "member" else self.layer["app"], user)
            facets = catalog.facetCounts(["portal_type", "review_state"], SearchableText="river")
            found.append({name: (f.matches, dict(f.counts)) for name, f in facets.items()})
            found.append(catalog.suggestions(SearchableText="rivr"))
            found.append([b.snippet() for b in catalog.searchResults(SearchableText="river", sort_on="id")])
        login(self.layer["app"], SITE_OWNER_NAME)
        return found

    def test_searches(self):
        expected = self.paths(self.catalog)
        self.assertEqual(expected[0], ["/plone/lp/d0", "/plone/lp/d1", "/plone/lp/d2"])
        self.assertEqual(expected[1], ["/plone/lp/d0", "/plone/lp/d1"])
        self.assertEqual(expected[2], ["/plone/lp/d0"])
        self.assertEqual(sorted(expected[3]), ["/plone/lp/d0", "/plone/lp/d1", "/plone/lp/d2"])
        self.assertEqual(self.paths(self.role_catalog), expected)
        found = api.content.find(context=self.site["lp"], portal_type="Document", sort_on="id")
        self.assertEqual([brain.getPath() for brain in found], expected[0])
        self.assertEqual(
            [brain.Title for brain in found],
            ["Doc 0 river stone river", "Doc 1 river forest", "Doc 2 stone cloud"],
        )
        self.assertEqual(self.role_catalog.getCounter(), self.catalog.getCounter())
        (brain,) = self.role_catalog.unrestrictedSearchResults(UID=self.site["lp"]["d2"].UID())
        self.assertEqual(brain.getObject().getId(), "d2")

    def test_facets_suggestions_and_snippets(self):
        expected = self.additions(self.catalog)
        member, owner = expected[:3], expected[3:]
        self.assertEqual(member[0]["review_state"], (1, {"published": 1}))  # only what a Member may see
        self.assertEqual(owner[0]["review_state"], (2, {"private": 1, "published": 1}))
        self.assertEqual(owner[1], ["river"])
        self.assertEqual(len(owner[2]), 2)
        self.assertIn("river", owner[2][0].lower())
        self.assertEqual(self.additions(self.role_catalog), expected)

    def test_searches_on_a_pooled_connection(self):
        expected = self.paths(self.catalog)
        with mock.patch.dict(os.environ, {READ_DSN_ENV: self.dsn}):
            self.assertEqual(self.paths(self.role_catalog), expected)
            self.assertEqual(held_connection().info.user, self.role)  # the request's
            self.assertEqual(self.role_catalog.getCounter(), self.catalog.getCounter())
            release_request_connection()

    def test_a_role_that_only_searches(self):
        """A read replica's role: SEARCH_GRANTS, no writes."""
        reader = create_role(self.owner_dsn, "pgcatalog_read")
        self.addCleanup(drop_role, self.owner_dsn, reader)
        with psycopg.connect(self.owner_dsn, autocommit=True) as conn:
            grant_search_role(conn, reader)
        dsn = conninfo.make_conninfo(self.owner_dsn, user=reader)
        expected = self.paths(self.catalog), self.additions(self.catalog)
        replicas.forget()
        with mock.patch.dict(os.environ, {READ_DSN_ENV: dsn}):
            self.assertEqual((self.paths(self.role_catalog), self.additions(self.role_catalog)), expected)
            self.assertEqual(held_connection().info.user, reader)
            release_request_connection()
        # served there: the role may read how far the server has replayed
        self.assertEqual(set(replicas.STATS), {"replica"})
        with psycopg.connect(dsn, autocommit=True) as conn:
            with self.assertRaises(psycopg.errors.InsufficientPrivilege):
                conn.execute("UPDATE pgcatalog_counter SET value = value + 1")


class SharedCountsTest(RuntimeRoleTestCase):
    def test_facet_counts_are_shared_where_the_role_may_write_them(self):
        """The run-time role shares the facet counts it makes from every
        row; without the grant on ``pgcatalog_shared`` it counts as
        before and shares nothing."""
        from plone.pgcatalog import facets

        shared = "SELECT count(*) FROM pgcatalog_shared"
        facets._remembered.clear()
        with psycopg.connect(self.owner_dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM pgcatalog_shared")
            conn.execute(f"REVOKE INSERT, UPDATE, DELETE ON pgcatalog_shared FROM {self.role}")
        counted = self.role_catalog.facetCounts(["portal_type"])["portal_type"].counts
        self.assertEqual(self.owner_rows(shared), [(0,)])
        with psycopg.connect(self.owner_dsn, autocommit=True) as conn:
            grant_runtime_role(conn, self.role)
        facets._remembered.clear()
        self.assertEqual(self.role_catalog.facetCounts(["portal_type"])["portal_type"].counts, counted)
        self.assertEqual(self.owner_rows(shared), [(1,)])
        facets._remembered.clear()
        transaction.begin()
        self.assertEqual(self.catalog.facetCounts(["portal_type"])["portal_type"].counts, counted)


class WriteTest(RuntimeRoleTestCase):
    def test_content_changes(self):
        counter = self.counter()
        folder = api.content.create(container=self.site, type="Folder", id="lp", title="Folder")
        doc = api.content.create(container=folder, type="Document", id="doc", title="Alpha")
        transaction.commit()
        self.assertGreater(self.counter(), counter)
        zoid, cataloged, words, meta = self.row("/plone/lp/doc")
        self.assertTrue(cataloged and words)
        self.assertIn("Alpha", meta)
        self.assertTrue(self.row("/plone/lp"))

        # edit
        doc = self.site["lp"]["doc"]
        doc.title = "Beta"
        doc.reindexObject()
        transaction.commit()
        self.assertIn("Beta", self.row("/plone/lp/doc")[3])
        self.assertEqual([b.getPath() for b in self.role_catalog(Title="Beta")], ["/plone/lp/doc"])
        self.assertEqual(len(self.role_catalog(SearchableText="alpha")), 0)

        # a workflow transition (a partial reindex, in the processor's finalize)
        api.content.transition(obj=doc, transition="publish")
        transaction.commit()
        self.assertEqual(
            [b.getPath() for b in self.role_catalog(review_state="published", path="/plone/lp")],
            ["/plone/lp/doc"],
        )
        self.assertEqual(
            self.owner_rows("SELECT idx->>'review_state' FROM object_state WHERE zoid = %s", [zoid]),
            [("published",)],
        )

        # a move, then a rename of the folder above the document
        other = api.content.create(container=self.site, type="Folder", id="other", title="Other")
        transaction.commit()
        api.content.move(source=self.site["lp"]["doc"], target=other)
        transaction.commit()
        self.assertIsNone(self.row("/plone/lp/doc"))
        self.assertEqual(self.row("/plone/other/doc")[0], zoid)
        api.content.rename(obj=self.site["other"], new_id="renamed")
        transaction.commit()
        self.assertEqual(self.row("/plone/renamed/doc")[0], zoid)
        self.assertEqual(
            [b.getPath() for b in self.role_catalog(path="/plone/renamed", portal_type="Document")],
            ["/plone/renamed/doc"],
        )

        # delete
        api.content.delete(self.site["renamed"]["doc"])
        transaction.commit()
        self.assertIsNone(self.row("/plone/renamed/doc"))
        self.assertEqual(
            self.owner_rows("SELECT count(*) FROM object_state WHERE zoid = %s AND idx IS NOT NULL", [zoid]),
            [(0,)],
        )

        report = verify(self.role_catalog)
        self.assertTrue(report.ok, report.summary())
        # the owner's site agrees
        transaction.begin()
        self.assertEqual(len(self.catalog(path="/plone/renamed")), 1)
        self.assertTrue(verify(self.catalog).ok)

    def test_pack(self):
        """zodb-pgjsonb's pack, as the role: a temporary table, deletes."""
        doc = api.content.create(container=self.site, type="Document", id="packed", title="Packed")
        transaction.commit()
        zoid = int.from_bytes(doc._p_oid, "big")
        api.content.delete(doc)
        transaction.commit()
        self.db.pack()
        self.assertEqual(self.owner_rows("SELECT count(*) FROM object_state WHERE zoid = %s", [zoid]), [(0,)])
        self.assertTrue(verify(self.role_catalog).ok)

    def test_clear_and_rebuild(self):
        """A rebuild empties and refills the site's rows and asks for
        ANALYZE, which PostgreSQL skips, with a warning, for a non-owner."""
        before = sorted(b.getPath() for b in self.role_catalog.unrestrictedSearchResults())
        self.role_catalog.clearFindAndRebuild()
        transaction.commit()
        self.assertEqual(sorted(b.getPath() for b in self.role_catalog.unrestrictedSearchResults()), before)
        self.assertTrue(verify(self.role_catalog).ok)


class OwnerOnlyTest(RuntimeRoleTestCase):
    def sql_indexes(self) -> list[str]:
        return [
            name
            for (name,) in self.owner_rows(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'object_state'"
            )
        ]

    def test_adding_an_index_needs_the_owner(self):
        indexes = self.sql_indexes()
        with self.assertRaises(SchemaPrivilegeError) as raised:
            self.role_catalog.addIndex("least_privilege", "FieldIndex", Extra(indexed_attrs="getId"))
        self.assertIsInstance(raised.exception, CatalogError)
        message = str(raised.exception)
        self.assertIn("'least_privilege'", message)
        self.assertIn(f"connects as {self.role!r}", message)
        self.assertIn("owner", message)
        # nothing registered, nothing queued: the transaction goes on
        self.assertNotIn("least_privilege", self.role_catalog.indexes())
        self.assertFalse(changes_for(self.role_catalog).ddl)
        api.content.create(container=self.site, type="Document", id="after", title="After")
        transaction.commit()
        self.assertTrue(self.row("/plone/after"))
        self.assertEqual(self.sql_indexes(), indexes)
        self.assertNotIn("least_privilege", self.role_catalog.indexes())
        # an upgrade (which adds SQL indexes) says the same
        with self.assertRaises(SchemaPrivilegeError):
            upgrade(self.role_catalog)
        # the owner may
        require_schema_owner(self.catalog, "Adding an index")

    def test_ddl_at_commit_rolls_back_everything(self):
        """Without the check, the role's commit fails in PostgreSQL and
        neither the index nor the content is written."""
        index = IndexDef("least_privilege", FIELD, ("getId",), {"value_type": TEXT_VALUE})
        changes_for(self.role_catalog).ddl.extend(index_ddl(index))
        api.content.create(container=self.site, type="Document", id="lost", title="Lost")
        with self.assertRaises(SchemaPrivilegeError) as raised:
            transaction.commit()
        self.assertIsInstance(raised.exception.__cause__, psycopg.errors.InsufficientPrivilege)
        transaction.abort()
        self.assertIsNone(self.row("/plone/lost"))
        self.assertFalse([n for n in self.sql_indexes() if "least_privilege" in n])

    def test_changing_an_index_and_uninstalling_need_the_owner(self):
        defs = index_defs(self.role_catalog)
        with self.assertRaises(SchemaPrivilegeError) as raised:
            reconfigure_index(self.role_catalog, replace(defs["getId"], attrs=("id",)))
        self.assertIn("Changing the index 'getId'", str(raised.exception))
        self.assertEqual(index_defs(self.role_catalog)["getId"].attrs, defs["getId"].attrs)
        self.assertFalse(changes_for(self.role_catalog).ddl)
        with self.assertRaises(SchemaPrivilegeError):
            uninstall(self.site.portal_setup)
        self.assertIs(aq_base(self.site.portal_catalog), aq_base(self.role_catalog))
        transaction.commit()
        self.assertTrue(self.row("/plone"))
