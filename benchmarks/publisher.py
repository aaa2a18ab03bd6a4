"""What Zope's publisher does around a request, and a writer in another thread.

The query benchmark normally runs every search in a fresh transaction of
one long-lived ZODB connection and request.  Two options of ``run.py``
make it closer to a live site (issue 21, point 2):

- ``--first-in-request``: :class:`RequestCycle` ends each request and
  begins the next one the way ``ZPublisher.WSGIPublisher.publish_module``
  does (commit, ``PubSuccess``, an ``IPubEnd`` event, ``app._p_jar.close()``,
  ``EndRequestEvent``; then ``setRequest``, ``db.open()``,
  ``transaction.begin()``, ``PubStart``, traversal's site hook, the user),
  so each timed search is the first of its request;
- ``--after-writes``: :class:`Writer` commits a real change of one document
  (its title, then ``reindexObject()``) before each timed search, from
  another thread with a ZODB connection of its own, as another worker
  thread of the same instance would (``same``: on the reading thread's own
  connection instead).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from workload import doc_spec
from workload import SITE_ID

import contextlib
import queue
import shutil
import tempfile
import threading
import time
import transaction
import zopesite


def publisher_begin(db: Any, anonymous: bool) -> tuple[Any, Any]:
    """Begin a request as the publisher does; return ``(app, site)``.

    ``db.open()`` and ``transaction.begin()`` each poll the storage (the
    snapshot begins there), ``PubStart`` is notified, traversing the site
    sets it as the local site, and the user is authenticated.
    """
    from AccessControl.SecurityManagement import noSecurityManager
    from Testing.makerequest import makerequest
    from zope.component.hooks import setSite
    from zope.event import notify
    from zope.globalrequest import setRequest
    from zope.security.management import newInteraction
    from zope.traversing.interfaces import BeforeTraverseEvent
    from ZPublisher import pubevents

    conn = db.open()
    app = makerequest(conn.root()["Application"])
    request = app.REQUEST
    setRequest(request)
    newInteraction()
    transaction.begin()
    notify(pubevents.PubStart(request))
    site = app[SITE_ID]
    notify(BeforeTraverseEvent(site, request))
    setSite(site)
    if anonymous:
        noSecurityManager()
    else:
        zopesite.login(app)
    return app, site


def publisher_end(app: Any) -> None:
    """End the request of *app* as the publisher does: commit, ``PubSuccess``
    (an ``IPubEnd``: plone.pgcatalog gives back a pooled connection),
    close the ZODB connection, ``EndRequestEvent`` (clears the site)."""
    from AccessControl.SecurityManagement import noSecurityManager
    from zope.event import notify
    from zope.globalrequest import clearRequest
    from zope.security.management import endInteraction
    from ZPublisher import pubevents

    request = app.REQUEST
    transaction.commit()
    notify(pubevents.PubSuccess(request))
    endInteraction()
    noSecurityManager()
    if transaction.manager.manager._txn is not None:
        transaction.abort()
    app._p_jar.close()
    request.close()
    clearRequest()


class RequestCycle:
    """One request after another on *db*; :meth:`next` ends the current
    request (if any) and begins the next, timing the two parts."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.app: Any = None
        self.end_ms: list[float] = []
        self.begin_ms: list[float] = []

    def adopt(self, app: Any) -> None:
        """Treat *app* (the worker's long-lived request) as the current one."""
        self.app = app

    def next(self, anonymous: bool, record: bool = True) -> tuple[Any, Any]:
        """End the current request, begin a new one; ``(app, site)``.
        *record*: keep the two parts' milliseconds."""
        started = time.perf_counter()
        if self.app is not None:
            publisher_end(self.app)
        ended = time.perf_counter()
        self.app, site = publisher_begin(self.db, anonymous)
        if record:
            self.end_ms.append((ended - started) * 1000.0)
            self.begin_ms.append((time.perf_counter() - ended) * 1000.0)
        return self.app, site


def change_document(site: Any, number: int, serial: int) -> None:
    """A real catalog change: a new title for document *number*, then
    ``reindexObject()`` (every index and the metadata)."""
    spec = doc_spec(number)
    doc = site[spec.folder][spec.id]
    doc.title = f"{spec.title} (edit {serial})"
    doc.reindexObject()


class Writer:
    """Commits one document change at a time, for the benchmark's
    ``--after-writes``.

    ``thread``: in a thread of its own that holds its own ZODB connection,
    request and Manager login, like another worker thread of the instance;
    the reader's connection then sees the change as invalidations.
    ``same``: on the caller's thread and connection (*site_of* gives the
    current site), so the reader's cache already holds the new state.
    """

    def __init__(self, db: Any, docs: int, where: str = "thread", site_of: Callable[[], Any] | None = None):
        self.docs = docs
        self.where = where
        self.site_of = site_of
        self.serial = 0
        self.write_ms: list[float] = []
        if where == "thread":
            self._jobs: queue.Queue = queue.Queue()
            self._done: queue.Queue = queue.Queue()
            self._thread = threading.Thread(target=self._serve, args=(db,), daemon=True)
            self._thread.start()
            self._reply()

    def write(self) -> None:
        """Commit the change of the next document (they take turns)."""
        number = self.serial % self.docs
        self.serial += 1
        started = time.perf_counter()
        if self.where == "thread":
            self._jobs.put((number, self.serial))
            self._reply()
        else:
            transaction.abort()
            change_document(self.site_of(), number, self.serial)
            transaction.commit()
        self.write_ms.append((time.perf_counter() - started) * 1000.0)

    def close(self) -> None:
        if self.where == "thread":
            self._jobs.put(None)
            self._thread.join()

    def _reply(self) -> None:
        error = self._done.get()
        if error is not None:
            raise RuntimeError("the writer thread failed") from error

    def _serve(self, db: Any) -> None:
        try:
            app, site = publisher_begin(db, anonymous=False)
        except BaseException as error:
            self._done.put(error)
            return
        self._done.put(None)
        while (job := self._jobs.get()) is not None:
            try:
                transaction.begin()
                change_document(site, *job)
                transaction.commit()
                self._done.put(None)
            except BaseException as error:
                transaction.abort()
                self._done.put(error)
        publisher_end(app)


@contextlib.contextmanager
def written_site(docs: int, prefix: str) -> Iterator[tuple[Any, Writer, RequestCycle]]:
    """A plone.pgcatalog site of *docs* documents on a fresh database
    (analyzed), with a :class:`Writer` in its own thread and a
    :class:`RequestCycle` that has adopted the site's app: ``(worker,
    writer, cycle)``.  Closed and dropped afterwards."""
    from database import fresh_database
    from database import pg_server
    from worker import Worker

    home = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        with pg_server() as server, fresh_database(server, "pgcatalog") as dsn:
            worker = Worker({"backend": "pgcatalog", "dsn": dsn, "home": str(home)})
            worker.build()
            worker.grow_to(docs)
            worker.settle()
            db = worker.app._p_jar.db()
            writer = Writer(db, docs, "thread")
            cycle = RequestCycle(db)
            transaction.abort()
            cycle.adopt(worker.app)
            try:
                yield worker, writer, cycle
            finally:
                writer.close()
                transaction.abort()
                db.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
