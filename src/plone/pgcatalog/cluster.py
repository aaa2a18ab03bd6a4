"""A primary and streaming standbys of one's own, on this machine.

For the tests and benchmarks of searches on replicas: PostgreSQL's own
binaries from the ``pgserver`` package (the embedded server the tests and
the demo use), a primary in a temporary directory and each standby made
from it by ``pg_basebackup``, all listening on Unix sockets in the
primary's directory only.  Never a server anyone else uses: the tests
pause a standby's replay, kill it and start it again.
"""

from __future__ import annotations

from pathlib import Path

from psycopg import conninfo
from psycopg import sql

import os
import psycopg
import shutil
import subprocess
import tempfile
import time


__all__ = ["Cluster"]


class Cluster:
    """A primary and *standbys* streaming standbys, started by :meth:`start`
    and removed by :meth:`close`."""

    def __init__(self, standbys: int = 1) -> None:
        self.count = standbys
        self._server = None
        self._tmp = ""
        self._standbys: list[Path] = []

    # -- life

    def start(self) -> None:
        import pgserver

        self._tmp = tempfile.mkdtemp(prefix="pgcatalog-cluster-")
        os.chmod(self._tmp, 0o755)
        primary = Path(self._tmp) / "primary"
        primary.mkdir()
        self._server = pgserver.get_server(primary, cleanup_mode="stop")
        info = self._server.get_postmaster_info()
        self.socket_dir, self.port = str(info.socket_dir), int(info.port)
        for index in range(self.count):
            self._standbys.append(self._make_standby(index))
            self.start_standby(index)

    def close(self) -> None:
        for index in range(len(self._standbys)):
            self.stop_standby(index)
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        from pgserver._commands import POSTGRES_BIN_PATH

        return subprocess.run(
            [str(POSTGRES_BIN_PATH / program), *args],
            check=check,
            capture_output=True,
            text=True,
            user=self._server.system_user,
            timeout=120,
        )

    def _make_standby(self, index: int) -> Path:
        data = Path(self._tmp) / f"standby{index}"
        data.mkdir(mode=0o700)
        user = self._server.system_user
        if user is not None:
            shutil.chown(data, user, user)
        primary = f"host={self.socket_dir} port={self.port} user=postgres"
        self._run("pg_basebackup", "-D", str(data), "-R", "-X", "stream", "-c", "fast", "-d", primary)
        return data

    def standby_port(self, index: int) -> int:
        return self.port + 1 + index

    def start_standby(self, index: int) -> None:
        """Start standby *index* (again); returns once it takes connections."""
        data = self._standbys[index]
        options = f'-h "" -k {self.socket_dir} -p {self.standby_port(index)}'
        self._run("pg_ctl", "-D", str(data), "-w", "-o", options, "-l", str(data / "log"), "start")

    def running(self, index: int) -> bool:
        return self._run("pg_ctl", "-D", str(self._standbys[index]), "status", check=False).returncode == 0

    def restore(self) -> None:
        """Every standby running and replaying again, caught up."""
        for index in range(self.count):
            if not self.running(index):
                self.start_standby(index)
            self.resume(index)
        self.catch_up()

    def stop_standby(self, index: int) -> None:
        """Kill standby *index* at once, as a crash would (``immediate``)."""
        self._run("pg_ctl", "-D", str(self._standbys[index]), "-m", "immediate", "stop", check=False)

    # -- where

    def dsn(self, dbname: str = "postgres") -> str:
        """The primary's DSN for database *dbname*."""
        return conninfo.make_conninfo(host=self.socket_dir, port=self.port, user="postgres", dbname=dbname)

    def standby_dsn(self, index: int, dbname: str = "postgres") -> str:
        return conninfo.make_conninfo(
            host=self.socket_dir, port=self.standby_port(index), user="postgres", dbname=dbname
        )

    def read_dsn(self, dbname: str = "postgres") -> str:
        """Every standby, as libpq takes several servers: in random order,
        a connection to the next when one cannot be reached."""
        ports = ",".join(str(self.standby_port(i)) for i in range(self.count))
        hosts = ",".join([self.socket_dir] * self.count)
        return conninfo.make_conninfo(
            host=hosts, port=ports, user="postgres", dbname=dbname, load_balance_hosts="random"
        )

    # -- replay

    def _on_standby(self, index: int, *statements: str | sql.Composable) -> None:
        with psycopg.connect(self.standby_dsn(index), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def configure_standby(self, index: int, **settings: str | None) -> None:
        """Set (None: reset) server settings of standby *index*, reloaded."""
        changes = [
            sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(name))
            if value is None
            else sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value))
            for name, value in settings.items()
        ]
        self._on_standby(index, *changes, "SELECT pg_reload_conf()")

    def pause(self, index: int) -> None:
        """Stop standby *index* replaying what the primary writes (lag)."""
        self._on_standby(index, "SELECT pg_wal_replay_pause()")

    def resume(self, index: int) -> None:
        self._on_standby(index, "SELECT pg_wal_replay_resume()")

    def catch_up(self, timeout: float = 30) -> None:
        """Wait until every standby has replayed what the primary wrote."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            target = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        deadline = time.monotonic() + timeout
        behind = "SELECT pg_wal_lsn_diff(%s, pg_last_wal_replay_lsn()) > 0"
        for index in range(self.count):
            with psycopg.connect(self.standby_dsn(index), autocommit=True) as conn:
                while conn.execute(behind, [target]).fetchone()[0]:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"standby {index} did not replay {target} within {timeout} s")
                    time.sleep(0.01)
