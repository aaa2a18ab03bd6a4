"""Database roles: what a running site may do without owning the tables.

The role that installs the catalog (or first starts zodb-pgjsonb) owns
``object_state`` and the catalog's tables, and only it can change their
schema.  A site can then run as a role that owns nothing: it reads and
writes rows, and that is all a search or a content change needs.
:data:`RUNTIME_GRANTS` is what such a role is granted, by the owner;
:data:`SEARCH_GRANTS` is the smaller set a role that only searches (the
``PGCATALOG_READ_DSN`` of a read replica) needs.

Whatever adds SQL indexes or changes the schema (install, upgrade,
``addIndex``, uninstall) needs the owner: :func:`require_schema_owner`
says so before anything is changed, instead of letting the commit fail.
"""

from __future__ import annotations

from typing import Any

from plone.pgcatalog import registry as r
from plone.pgcatalog.connection import storage_instance
from plone.pgcatalog.errors import SchemaPrivilegeError
from plone.pgcatalog.schema import index_ddl
from psycopg import sql
from psycopg.rows import tuple_row

import psycopg


__all__ = [
    "RUNTIME_GRANTS",
    "SEARCH_GRANTS",
    "STORAGE_TABLES",
    "grant_runtime_role",
    "grant_search_role",
    "grants_sql",
    "owned_index_ddl",
    "require_schema_owner",
    "schema_owner",
]


STORAGE_TABLES = (
    "transaction_log",
    "object_state",
    "blob_state",
    "object_history",  # history-preserving storages
    "pack_state",  # history-preserving storages
    "blob_history",  # databases from before zodb-pgjsonb dropped it
    "cache_warm_stats",  # zodb-pgjsonb's cache warmer (cache-warm-pct > 0)
)
"""zodb-pgjsonb's tables; the grants name those a database has."""


RUNTIME_GRANTS = """\
GRANT CONNECT, TEMPORARY ON DATABASE {database} TO {role};
-- CREATE: zodb-pgjsonb runs CREATE TABLE IF NOT EXISTS pgjsonb_schema_state at
-- every start, and PostgreSQL wants CREATE on the schema even when it exists.
GRANT USAGE, CREATE ON SCHEMA {schema} TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON {storage_tables} TO {role};
GRANT USAGE, SELECT, UPDATE ON SEQUENCE zoid_seq TO {role};
GRANT SELECT ON pgjsonb_schema_state, pgcatalog_schema TO {role};
GRANT SELECT, UPDATE ON pgcatalog_counter TO {role};
GRANT SELECT, INSERT, UPDATE ON pgcatalog_text_stats TO {role};
GRANT SELECT, INSERT ON pgcatalog_words TO {role};
GRANT SELECT, INSERT, DELETE ON pgcatalog_changes, pgcatalog_commits TO {role};
GRANT UPDATE ON pgcatalog_commits TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON pgcatalog_shared TO {role};
GRANT EXECUTE ON FUNCTION pgcatalog_okapi(float8, float8, float8, float8), pgcatalog_frequency(tsvector, text),
    pgcatalog_occurrences(tsvector, text, tsquery) TO {role};
"""
"""What the role a site runs as needs, granted by the owner after install:
searches, content changes and their catalog rows (a commit updates
``object_state`` and ``pgcatalog_counter``; the text statistics trigger inserts
and updates ``pgcatalog_text_stats``, the lexicon's inserts new words into
``pgcatalog_words``, the change log's into ``pgcatalog_changes`` and
``pgcatalog_commits``, and deletes what it no longer keeps; facet counts
made from every row are kept in ``pgcatalog_shared``), rebuilds,
verify and repair, and zodb-pgjsonb's pack (a temporary table, deletes) and
undo (the same tables)."""


SEARCH_GRANTS = """\
GRANT CONNECT ON DATABASE {database} TO {role};
GRANT USAGE ON SCHEMA {schema} TO {role};
GRANT SELECT ON object_state, pgcatalog_counter, pgcatalog_text_stats, pgcatalog_words TO {role};
GRANT SELECT ON pgcatalog_changes, pgcatalog_commits, pgcatalog_shared TO {role};
GRANT SELECT ON transaction_log TO {role};
GRANT EXECUTE ON FUNCTION pgcatalog_okapi(float8, float8, float8, float8), pgcatalog_frequency(tsvector, text),
    pgcatalog_occurrences(tsvector, text, tsquery) TO {role};
"""
"""What a role that only serves searches (``PGCATALOG_READ_DSN``) needs."""


def grants_sql(cursor: Any, template: str, role: str) -> str:
    """*template* (:data:`RUNTIME_GRANTS` or :data:`SEARCH_GRANTS`) for
    *role* in the database *cursor* is connected to: its name, its current
    schema, and the storage tables it has."""
    cursor.execute(
        "SELECT current_database(), current_schema(), "
        "array(SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(t) IS NOT NULL)",
        [list(STORAGE_TABLES)],
    )
    database, schema, tables = cursor.fetchone()
    text = template.format(
        database=sql.Identifier(database).as_string(cursor),
        schema=sql.Identifier(schema).as_string(cursor),
        role=sql.Identifier(role).as_string(cursor),
        storage_tables=", ".join(tables),
    )
    return text


def grant_runtime_role(conn: psycopg.Connection, role: str) -> str:
    """Grant *role* :data:`RUNTIME_GRANTS`, on a connection of the owner;
    returns the SQL it ran."""
    return _grant(conn, RUNTIME_GRANTS, role)


def grant_search_role(conn: psycopg.Connection, role: str) -> str:
    """Grant *role* :data:`SEARCH_GRANTS`, on a connection of the owner;
    returns the SQL it ran."""
    return _grant(conn, SEARCH_GRANTS, role)


def _grant(conn: psycopg.Connection, template: str, role: str) -> str:
    with conn.cursor(row_factory=tuple_row) as cursor:
        text = grants_sql(cursor, template, role)
        cursor.execute(text)
    return text


OWNER_SQL = """SELECT pg_has_role(c.relowner, 'USAGE'), pg_get_userbyid(c.relowner)::text, current_user::text
FROM pg_class c WHERE c.oid = to_regclass('object_state')"""


def schema_owner(conn: psycopg.Connection) -> tuple[bool, str, str] | None:
    """Whether *conn*'s role may change ``object_state`` (it owns the
    table, or has the privileges of its owner), the owner's name and the
    role's; None when the table does not exist."""
    with conn.cursor(row_factory=tuple_row) as cursor:
        cursor.execute(OWNER_SQL)
        return cursor.fetchone()


def require_schema_owner(context: Any, what: str) -> None:
    """Raise :class:`~plone.pgcatalog.errors.SchemaPrivilegeError` when the
    storage of *context* (the tool or the site) connects as a role that may
    not change ``object_state``'s schema, which *what* needs.  Asked on
    the storage's own connection: its role runs the DDL at commit."""
    instance = storage_instance(context)
    conn = getattr(instance, "pg_connection", None)
    if conn is None:
        return
    found = schema_owner(conn)
    if found is None or found[0]:
        return
    _, owner, role = found
    raise SchemaPrivilegeError(
        f"{what} changes the database schema (SQL indexes on object_state), which only "
        f"the tables' owner {owner!r} may do; this site connects as {role!r}. "
        "Do it in a Zope process that connects as the owner role "
        "(see 'Database roles and grants' in plone.pgcatalog's reference)."
    )


def owned_index_ddl(tool: Any, index: r.IndexDef, what: str) -> list[str]:
    """The DDL *index* needs in *tool*'s catalog, after
    :func:`require_schema_owner` when there is any: the caller asks before
    it changes anything, so a refusal leaves nothing half done, and an
    index without SQL indexes of its own needs no owner (one added empty
    does: its first value brings them)."""
    ddl = index_ddl(r.typed_for(tool, index))
    if ddl or not index.decided:
        require_schema_owner(tool, what)
    return ddl
