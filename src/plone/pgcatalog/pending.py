"""This transaction's catalog changes, waiting for the storage to write them.

Catalog calls record rows here, keyed by the object's OID; the state
processor hands them to zodb-pgjsonb when the object row is written.  The
store is attached to the ZODB transaction and joins it as a savepoint-aware
data manager: abort drops it, a savepoint rollback restores it.  Nothing of
it is ever put on the object, so no catalog data reaches a pickle.
"""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from plone.pgcatalog.connection import jar_of
from plone.pgcatalog.connection import snapshot_tid
from plone.pgcatalog.row import CatalogRow
from zope.interface import implementer

import transaction
import transaction.interfaces


_KEY = "plone.pgcatalog.pending"


__all__ = ["Pending", "changes_for", "get_pending"]


@dataclass
class Pending:
    """Rows to write (by zoid) and catalog paths to clear."""

    rows: dict[int, CatalogRow] = field(default_factory=dict)
    removed: dict[str, bool] = field(default_factory=dict)  # path -> True, ordered
    written: set[int] = field(default_factory=set)  # zoids whose row went with the object
    ddl: list[str] = field(default_factory=list)  # CREATE INDEX statements for new indexes
    emptied: str | None = None  # manage_catalogClear: the site whose rows go first
    cleared: dict[str, str | None] = field(default_factory=dict)  # reconfigured index -> its own column
    reordered: dict = field(default_factory=dict)  # container path -> container (see positions)
    moving: dict = field(default_factory=dict)  # zoid -> (old path, moves.Plan): below a moving folder
    moved: dict = field(default_factory=dict)  # zoid -> moves.Plan of its queued reindex
    secured: set[int] = field(default_factory=set)  # zoids of subtrees to check (see security)
    seen: int | None = None  # the tid of the snapshot the rows were computed in (see processor)

    def catalog(self, zoid: int, row: CatalogRow) -> None:
        earlier = self.rows.get(zoid)
        if earlier is not None:
            if earlier.path != row.path:
                self.removed[earlier.path] = True
            row = earlier.merged(row)
        self.rows[zoid] = row

    def uncatalog(self, path: str) -> None:
        for zoid in [z for z, row in self.rows.items() if row.path == path]:
            del self.rows[zoid]
        self.removed[path] = True

    def move(self, zoid: int, old: str, new: str) -> None:
        """The object *zoid* moved from *old* to *new* (below a moved
        folder): a row it has here follows."""
        earlier = self.rows.get(zoid)
        if earlier is not None and earlier.path == old:
            self.rows[zoid] = replace(earlier, path=new)
        self.removed[old] = True

    def clear_index(self, name: str, column: str | None) -> None:
        """ZCatalog's ``index.clear()``: the values of index *name* (stored
        in *column*, if it has one) go, those computed so far in this
        transaction and, at commit, the committed ones of rows that this
        transaction does not rewrite."""
        self.rows = {zoid: row.cleared(name, column) for zoid, row in self.rows.items()}
        self.cleared[name] = column

    def snapshot(self) -> Pending:
        return Pending(
            dict(self.rows),
            dict(self.removed),
            set(self.written),
            list(self.ddl),
            self.emptied,
            dict(self.cleared),
            dict(self.reordered),
            dict(self.moving),
            dict(self.moved),
            set(self.secured),
        )

    def restore(self, other: Pending) -> None:
        # ``seen`` stays: a savepoint does not change the snapshot
        self.rows, self.removed, self.written = dict(other.rows), dict(other.removed), set(other.written)
        self.ddl, self.emptied, self.cleared = list(other.ddl), other.emptied, dict(other.cleared)
        self.reordered, self.moving, self.moved = dict(other.reordered), dict(other.moving), dict(other.moved)
        self.secured = set(other.secured)

    def clear(self, site: str) -> None:
        """Forget everything: the catalog rows of the site at path *site*
        (other sites in the database keep theirs) are emptied at commit."""
        self.rows.clear()
        self.removed.clear()
        self.emptied = site

    def __bool__(self) -> bool:
        return bool(self.rows or self.removed or self.ddl or self.emptied or self.cleared)


def get_pending(txn: Any = None, create: bool = False) -> Pending | None:
    """The pending changes of *txn* (default: the current transaction)."""
    if txn is None:
        txn = transaction.get()
    try:
        return txn.data(_KEY)
    except KeyError:
        if not create:
            return None
    pending = Pending()
    txn.set_data(_KEY, pending)
    txn.join(PendingDataManager(pending, txn))
    return pending


def changes_for(context: Any) -> Pending:
    """The pending changes of this transaction, to add to on behalf of
    *context* (the catalog tool).

    The storage writes them in its vote, so its ZODB connection has to take
    part in the commit even when no object changed (``reindexIndex``, an
    ``uncatalog_object`` on its own): the connection joins the transaction
    without an object to store, as ZODB's own ``_register()`` does.

    It also notes the snapshot the rows are computed in (zodb-pgjsonb's
    polled tid), for the processor's check against concurrent commits.
    """
    jar = jar_of(context)
    if jar is not None:
        jar._register()
    pending = get_pending(create=True)
    if pending.seen is None and jar is not None:
        pending.seen = snapshot_tid(jar)
    return pending


@implementer(transaction.interfaces.IDataManager, transaction.interfaces.ISavepointDataManager)
class PendingDataManager:
    """Ties a :class:`Pending` to its transaction's outcome.

    It writes nothing itself: the storage writes the rows in its own
    two-phase commit.  It only forgets them when the transaction ends.
    """

    transaction_manager = transaction.manager

    def __init__(self, pending: Pending, txn):
        self.pending = pending
        self.txn = txn

    def _forget(self):
        self.pending.restore(Pending())

    def abort(self, txn):
        self._forget()

    def tpc_begin(self, txn):
        pass

    def commit(self, txn):
        pass

    def tpc_vote(self, txn):
        pass

    def tpc_finish(self, txn):
        self._forget()

    def tpc_abort(self, txn):
        self._forget()

    def sortKey(self):
        # After the ZODB connection: we must outlive the storage's vote.
        return "~plone.pgcatalog.pending"

    def savepoint(self):
        return PendingSavepoint(self.pending)


class PendingSavepoint:
    def __init__(self, pending: Pending):
        self.pending = pending
        self.state = pending.snapshot()

    def rollback(self):
        self.pending.restore(self.state)
