"""A Zope instance as a deployment has one, for tests that reach it over HTTP.

The instance is what ``mkwsgiinstance`` and Plone's deployment recipes
write, as the demo writes it: a ``zope.conf`` with a ``<pgjsonb>`` storage,
a ``site.zcml`` that loads the products (plone.pgcatalog comes in through
Plone's ``autoIncludePlugins``, as any add-on does), a PasteDeploy ``zope.ini``
serving it with waitress, and an admin made by ``addzopeuser``.  It runs in
a process of its own (``runwsgi``), started and stopped like a server.
"""

from __future__ import annotations

from pathlib import Path
from plone.pgcatalog.demo import SITE_ZCML
from plone.pgcatalog.demo import ZOPE_CONF

import os
import signal
import socket
import subprocess
import sys
import time

import requests


__all__ = ["ADMIN", "ZopeServer", "free_port"]

ADMIN = ("admin", "admin")

ZOPE_INI = """[app:zope]
use = egg:Zope#main
zope_conf = %(here)s/zope.conf

[server:main]
use = egg:waitress#main
listen = 127.0.0.1:{port}
threads = 4

[pipeline:main]
pipeline =
    egg:Zope#httpexceptions
    zope

[loggers]
keys = root

[handlers]
keys = console

[formatters]
keys = generic

[logger_root]
level = INFO
handlers = console

[handler_console]
class = StreamHandler
args = (sys.stderr,)
level = NOTSET
formatter = generic

[formatter_generic]
format = %(asctime)s %(levelname)s [%(name)s] %(message)s
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _script(name: str) -> str:
    """A console script of the Python running the tests."""
    return str(Path(sys.executable).parent / name)


class ZopeServer:
    """A Zope instance in *home* on the database *dsn*."""

    def __init__(self, home: Path, dsn: str) -> None:
        self.home = home
        self.dsn = dsn
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / "var" / "zope.log"
        self.process: subprocess.Popen | None = None
        etc = home / "etc"
        (home / "var").mkdir(parents=True, exist_ok=True)
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "site.zcml").write_text(SITE_ZCML)
        self.conf = etc / "zope.conf"
        self.conf.write_text(ZOPE_CONF.format(var=home, dsn=dsn))
        self.ini = etc / "zope.ini"
        self.ini.write_text(ZOPE_INI.replace("{port}", str(self.port)))

    def add_admin(self) -> None:
        """``addzopeuser``: the Manager a new instance is given."""
        subprocess.run(
            [_script("addzopeuser"), "-c", str(self.conf), *ADMIN],
            check=True,
            capture_output=True,
            cwd=self.home,
        )

    def start(self, timeout: float = 300) -> None:
        """``runwsgi etc/zope.ini``; returns once it answers."""
        with open(self.log, "a") as log:
            log.write("\n---- start ----\n")
            log.flush()
            self.process = subprocess.Popen(
                [_script("runwsgi"), str(self.ini)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Zope exited ({self.process.returncode}):\n{self.tail()}")
            try:
                requests.get(self.url + "/", timeout=5)
                return
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"Zope did not answer within {timeout} s:\n{self.tail()}")

    def stop(self) -> None:
        """SIGTERM, as a process manager stops it."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def errors(self, known: tuple[str, ...] = ()) -> list[str]:
        """The log's ERROR and CRITICAL records so far (with the lines that
        follow them), but those that contain one of *known*."""
        lines = self.log.read_text(errors="replace").splitlines()
        found = []
        for i, line in enumerate(lines):
            if " ERROR [" in line or " CRITICAL [" in line:
                record = "\n".join(lines[i : i + 25])
                if not any(text in record for text in known):
                    found.append(record)
        return found
