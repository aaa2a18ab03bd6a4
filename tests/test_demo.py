"""The demo's own life: its embedded PostgreSQL stops with it, and a taken
port is refused before anything starts."""

from pathlib import Path
from plone.pgcatalog import demo
from unittest import mock

import contextlib
import io
import os
import psycopg
import socket
import tempfile
import unittest


class DemoTest(unittest.TestCase):
    def setUp(self):
        self.var = Path(tempfile.mkdtemp(prefix="pgcatalog-demo-"))

    def test_taken_port_is_refused_before_anything_starts(self):
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            port = listener.getsockname()[1]
            self.assertTrue(demo.port_taken("127.0.0.1", port))
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                status = demo.main(["--port", str(port), "--var", str(self.var / "var")])
        self.assertEqual(status, 2)
        self.assertIn(f"Port {port} on 127.0.0.1 is taken", err.getvalue())
        self.assertFalse((self.var / "var").exists())  # no database, no files
        self.assertFalse(demo.port_taken("127.0.0.1", port))

    def test_embedded_postgresql_stops_with_the_demo(self):
        env = {k: v for k, v in os.environ.items() if k != "PGCATALOG_DSN"}
        with mock.patch.dict(os.environ, env, clear=True):
            with demo.database(self.var) as dsn:
                pid_file = self.var / "pgdata" / "postmaster.pid"
                self.assertTrue(pid_file.exists())
                with psycopg.connect(dsn) as conn:
                    self.assertEqual(conn.execute("SELECT 1").fetchone(), (1,))
        self.assertFalse(pid_file.exists())
        with self.assertRaises(psycopg.OperationalError):
            psycopg.connect(dsn, connect_timeout=3)

    def test_a_given_dsn_is_used_as_it_is(self):
        with mock.patch.dict(os.environ, {"PGCATALOG_DSN": "dbname=elsewhere"}):
            with demo.database(self.var) as dsn:
                self.assertEqual(dsn, "dbname=elsewhere")
        self.assertFalse((self.var / "pgdata").exists())
