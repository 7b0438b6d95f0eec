"""A throw-away PostgreSQL server for the tests: Label Studio on PostgreSQL, not SQLite.

Label Studio takes other code paths on PostgreSQL — the Data Manager action
``add_data_field`` (the bulk push-back of :mod:`ls_agreement.plugin.push`) is one ``UPDATE … jsonb_set`` there
instead of a Python loop over the tasks — so the push-back is tested on both databases.
This module runs the distribution's own PostgreSQL binaries (Debian's ``postgresql``
package: ``/usr/lib/postgresql/<major>/bin``) in a private cluster:

* its own data directory (``<data_dir>/pgdata``), its unix socket inside it, TCP only on
  127.0.0.1 and a free port — nothing touches a system cluster or ``/var/run/postgresql``;
* as the ``postgres`` system user when we are root (the server refuses to run as root),
  otherwise as ourselves;
* one login role and database for Label Studio (password auth over TCP, as Label Studio
  connects); the superuser is reachable only through the socket (trust auth);
* durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``): a test
  database, where Label Studio's ≈ 500 migrations are several times faster without it.

:meth:`LocalPostgres.env` gives the environment Label Studio 1.23.2 reads
(``label_studio/core/settings/base.py``: ``DJANGO_DB`` picks ``DATABASES_ALL['default']``,
the PostgreSQL entry, whose ``USER``/``PASSWORD``/``NAME``/``HOST``/``PORT`` come from
``POSTGRE_USER``/``POSTGRE_PASSWORD``/``POSTGRE_NAME``/``POSTGRE_HOST``/``POSTGRE_PORT``).
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ls_agreement.demo.host import free_port, secret_file, tail_log
from ls_agreement.demo.local_server import LocalLabelStudio, file_lock
from ls_agreement.plugin.errors import LocalServerError

#: Overrides the search for the server binaries (a directory holding initdb and postgres).
BIN_ENV = "LS_AGREEMENT_PG_BIN"
#: Debian/Ubuntu install every major version side by side here (not on PATH).
DEBIAN_GLOB = "/usr/lib/postgresql/*/bin"
SERVER_BINARIES = ("initdb", "postgres")
SUPERUSER = "postgres"
OS_USER = "postgres"          # the system user Debian's package creates
PASSWORD_NAME = "ls-agreement-pg-password"
LOG_NAME = "ls-agreement-postgres.log"
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# A unix socket path must fit in sockaddr_un.sun_path (108 bytes with the NUL).
_SOCKET_MAX = 100


class LocalPostgresError(LocalServerError):
    """The local PostgreSQL could not be found, initialised or started."""


def find_bin_dir(explicit: str | Path | None = None) -> Path:
    """The directory of the PostgreSQL server binaries (``initdb``, ``postgres``).

    Looked up in order: ``explicit``, ``$LS_AGREEMENT_PG_BIN``, Debian's
    ``/usr/lib/postgresql/<major>/bin`` (highest major first), ``pg_config --bindir`` and
    the directory of an ``initdb`` on ``PATH`` (other distributions).

    Raises
    ------
    LocalPostgresError
        No directory holds both binaries; the message says what to install.
    """
    candidates: list[Path] = []
    chosen = explicit or os.environ.get(BIN_ENV)
    if chosen:
        candidates.append(Path(chosen))
    else:
        def major(path: str) -> tuple[int, ...]:
            ver = Path(path).parent.name
            return tuple(int(p) for p in re.findall(r"\d+", ver)) or (0,)
        candidates += [Path(p) for p in sorted(glob.glob(DEBIAN_GLOB), key=major, reverse=True)]
        pg_config = shutil.which("pg_config")
        if pg_config:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                                     timeout=10).stdout.strip()
                if out:
                    candidates.append(Path(out))
        initdb = shutil.which("initdb")
        if initdb:
            candidates.append(Path(initdb).resolve().parent)
    for cand in candidates:
        if all(os.access(cand / b, os.X_OK) for b in SERVER_BINARIES):
            return cand
    where = str(chosen) if chosen else f"{DEBIAN_GLOB}, pg_config --bindir or PATH"
    raise LocalPostgresError(
        f"PostgreSQL server binaries ({', '.join(SERVER_BINARIES)}) not found in {where}: "
        "install Debian's `postgresql` package (apt-get install -y postgresql; `bash run.sh "
        f"test` does it when run as root) or point {BIN_ENV} at their directory")


def _quote_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class LocalPostgres:
    """One PostgreSQL server on 127.0.0.1 in a private data directory.

    Parameters
    ----------
    data_dir : Path
        Directory of this server: the cluster (``pgdata``, or a symlink to it, see below),
        the log and the Label Studio role's password. An existing cluster is reused.
    port : int
        TCP port on 127.0.0.1; ``0`` picks a free one (again at every start).
    user, database : str
        Login role and database created for Label Studio (the role owns the database).
    bin_dir : Path, optional
        Directory of the server binaries (default :func:`find_bin_dir`).
    durable : bool
        Keep PostgreSQL's crash safety (``fsync`` and friends); off by default because
        this is a test database and migrations run several times faster without it.

    Notes
    -----
    Run as root, the server runs as the ``postgres`` system user, which owns the cluster.
    That user must be able to reach ``data_dir``; when it cannot (pytest's ``/tmp/pytest-
    of-root`` is mode 0700), the cluster goes to a fresh directory under the system temp
    dir and ``data_dir/pgdata`` is a symlink to it (:meth:`remove` deletes both).
    """

    def __init__(self, data_dir: Path, port: int = 0, *, user: str = "label_studio",
                 database: str = "label_studio", bin_dir: Path | None = None,
                 durable: bool = False) -> None:
        for ident in (user, database):
            if not _IDENT.match(ident):
                raise ValueError(f"not a plain PostgreSQL identifier: {ident!r}")
        self.data_dir = Path(data_dir).resolve()
        self.requested_port = int(port)
        self.port = int(port)
        self.host = "127.0.0.1"
        self.user, self.database = user, database
        self.durable = bool(durable)
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- paths and identity ----------------------------------------------------------
    @property
    def bin_dir(self) -> Path:
        if self._bin_dir is None:
            self._bin_dir = find_bin_dir()
        return self._bin_dir

    def binary(self, name: str) -> Path:
        """Path of a PostgreSQL program (server or client) in :attr:`bin_dir`.

        Raises
        ------
        LocalPostgresError
            It is not there (e.g. ``pg_dump`` without the client package).
        """
        path = self.bin_dir / name
        if not os.access(path, os.X_OK):
            raise LocalPostgresError(f"{name} not found in {self.bin_dir} (Debian: "
                                     "apt-get install -y postgresql)")
        return path

    def has_binary(self, name: str) -> bool:
        return os.access(self.bin_dir / name, os.X_OK)

    @property
    def major(self) -> str:
        """Major version of the server binaries (``"15"``), from ``postgres --version``."""
        out = subprocess.run([str(self.binary("postgres")), "--version"], capture_output=True,
                             text=True, timeout=30).stdout
        m = re.search(r"(\d+)(?:\.\d+)?", out)
        if not m:
            raise LocalPostgresError(
                f"cannot read the version of {self.binary('postgres')}: {out!r}")
        return m.group(1)

    @property
    def cluster_link(self) -> Path:
        return self.data_dir / "pgdata"

    @property
    def cluster_dir(self) -> Path:
        """The cluster directory (``PGDATA``; also the directory of the unix socket)."""
        return self.cluster_link.resolve()

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    @property
    def password(self) -> str:
        """Password of :attr:`user` (random, kept in the data dir so restarts keep it)."""
        return secret_file(self.data_dir / PASSWORD_NAME, 24)

    @property
    def dsn(self) -> str:
        """``postgresql://user:password@127.0.0.1:port/database`` (libpq URI)."""
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{self.database}"

    def env(self, database: str | None = None) -> dict[str, str]:
        """Environment that points Label Studio 1.23 at this server.

        Parameters
        ----------
        database : str, optional
            Database to use instead of :attr:`database` (owned by :attr:`user`).
        """
        if not self.port:
            raise LocalPostgresError("PostgreSQL is not started: no port yet")
        return {
            "DJANGO_DB": "default",     # DATABASES_ALL['default'] is the PostgreSQL entry
            "POSTGRE_NAME": database or self.database,
            "POSTGRE_USER": self.user,
            "POSTGRE_PASSWORD": self.password,
            "POSTGRE_HOST": self.host,
            "POSTGRE_PORT": str(self.port),
        }

    # -- running as the cluster's owner --------------------------------------------------
    @staticmethod
    def _owner_ids() -> tuple[int, int] | None:
        """(uid, gid) to run the server as: the ``postgres`` user when we are root."""
        if os.geteuid() != 0:
            return None
        import pwd
        try:
            pw = pwd.getpwnam(OS_USER)
        except KeyError:
            raise LocalPostgresError(
                f"running as root, but there is no {OS_USER!r} system user to run PostgreSQL "
                "as (PostgreSQL refuses root; Debian's `postgresql` package creates it)") from None
        return pw.pw_uid, pw.pw_gid

    def _as_owner(self) -> dict[str, Any]:
        ids = self._owner_ids()
        return {} if ids is None else {"user": ids[0], "group": ids[1], "extra_groups": []}

    def _owner_can_write(self, path: Path) -> bool:
        kw = self._as_owner()
        if not kw:
            return os.access(path, os.W_OK | os.X_OK)
        proc = subprocess.run(["/bin/sh", "-c", 'test -w "$1" && test -x "$1"', "sh", str(path)],
                              cwd="/", capture_output=True, **kw)
        return proc.returncode == 0

    def _make_cluster_dir(self) -> Path:
        """Create the (empty) cluster directory, owned by the server's user, mode 0700."""
        ids = self._owner_ids()
        link = self.cluster_link
        target = link
        link.mkdir(mode=0o700)
        if ids is not None:
            os.chown(link, *ids)
        too_long = len(str(link / ".s.PGSQL.65535")) > _SOCKET_MAX
        if too_long or not self._owner_can_write(link):
            # The owner cannot reach data_dir (or the socket path would be too long):
            # a directory of its own under the temp dir instead, linked from data_dir.
            link.rmdir()
            target = Path(tempfile.mkdtemp(prefix="ls-agreement-pg-"))
            if ids is not None:
                os.chown(target, *ids)
            if not self._owner_can_write(target):
                shutil.rmtree(target, ignore_errors=True)
                raise LocalPostgresError(
                    f"the {OS_USER!r} user can reach neither {self.data_dir} nor {target.parent}")
            link.symlink_to(target, target_is_directory=True)
        return target

    def _run_owner(self, cmd: list[str], what: str, timeout: float = 300) -> None:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              cwd=str(self.cluster_dir), timeout=timeout, **self._as_owner())
        if proc.returncode != 0:
            tail = proc.stdout.decode(errors="replace").splitlines()[-30:]
            raise LocalPostgresError(f"could not {what} (exit {proc.returncode}):\n"
                                     + "\n".join(tail))

    # -- lifecycle -------------------------------------------------------------------
    def initialised(self) -> bool:
        return (self.cluster_link / "PG_VERSION").exists()

    def init(self) -> None:
        """``initdb`` the cluster, once (trust on the socket, SCRAM passwords over TCP)."""
        if self.initialised():
            return
        self.bin_dir  # noqa: B018 - fail with the install hint before creating anything
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.cluster_link.is_symlink() or self.cluster_link.exists():
            # a half-made cluster from an interrupted init: start over
            target = self.cluster_dir
            if self.cluster_link.is_symlink():
                self.cluster_link.unlink()
            shutil.rmtree(target, ignore_errors=True)
        cluster = self._make_cluster_dir()
        self._run_owner([str(self.binary("initdb")), "-D", str(cluster), "-U", SUPERUSER,
                         "--auth-local=trust", "--auth-host=scram-sha-256",
                         "--encoding=UTF8", "--locale=C", "--no-sync"],
                        "initialise the PostgreSQL cluster")

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 60) -> None:
        """Initialise if needed, start the server, wait until it accepts connections and
        make sure Label Studio's role and database exist (idempotent)."""
        if self.running:
            return
        self.init()
        attempts = 1 if self.requested_port else 3
        for attempt in range(attempts):
            self.port = self.requested_port or free_port()
            try:
                self._launch(timeout)
                break
            except LocalPostgresError as exc:
                # A free port taken by someone else meanwhile: pick another one.
                if attempt + 1 < attempts and "could not bind" in str(exc).lower():
                    continue
                raise
        self._ensure_role_and_database()

    def _launch(self, timeout: float) -> None:
        cluster = self.cluster_dir
        opts = ["-c", f"listen_addresses={self.host}", "-c", f"unix_socket_directories={cluster}",
                "-c", "max_connections=200",     # uwsgi workers × threads + our own tools
                "-c", "logging_collector=off"]
        if not self.durable:
            opts += ["-c", "fsync=off", "-c", "synchronous_commit=off",
                     "-c", "full_page_writes=off"]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        offset = log.tell()
        cmd = [str(self.binary("postgres")), "-D", str(cluster), "-p", str(self.port), *opts]
        self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, cwd=str(cluster),
                                      start_new_session=True, **self._as_owner())
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                with open(self.log_path, "rb") as fh:
                    fh.seek(offset)
                    text = fh.read().decode(errors="replace")
                raise LocalPostgresError(f"PostgreSQL exited with code {code} while starting; "
                                         f"its log ({self.log_path}):\n{text[-3000:]}")
            probe = subprocess.run(self._psql_cmd("postgres") + ["-c", "SELECT 1"],
                                   capture_output=True, timeout=30)
            if probe.returncode == 0:
                return
            time.sleep(0.2)
        self.stop()
        raise LocalPostgresError(f"PostgreSQL did not accept connections within {timeout:.0f} s; "
                                 f"last lines of {self.log_path}:\n{tail_log(self.log_path, 30)}")

    def stop(self, timeout: float = 30) -> None:
        """Fast shutdown (SIGINT: sessions rolled back, clean checkpoint); SIGQUIT, then
        SIGKILL of the process group, if it does not end within ``timeout`` seconds."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 5), (signal.SIGKILL, 5)):
            if proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if sig == signal.SIGKILL:
                    # the postmaster cannot clean up after SIGKILL: take its backends too
                    os.killpg(proc.pid, sig)
                else:
                    proc.send_signal(sig)   # the postmaster tells its backends itself
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(wait)

    def remove(self) -> None:
        """Stop and delete the cluster (and its directory outside ``data_dir``, if any)."""
        self.stop()
        if self.cluster_link.is_symlink():
            target = self.cluster_dir
            self.cluster_link.unlink()
            shutil.rmtree(target, ignore_errors=True)
        elif self.cluster_link.exists():
            shutil.rmtree(self.cluster_link, ignore_errors=True)

    def __enter__(self) -> "LocalPostgres":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- SQL -------------------------------------------------------------------------
    def _psql_cmd(self, database: str, user: str = SUPERUSER) -> list[str]:
        # Through the socket in the cluster dir (trust auth); -X: no ~/.psqlrc.
        return [str(self.binary("psql")), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
                str(self.cluster_dir), "-p", str(self.port), "-U", user, "-d", database]

    def psql(self, sql: str, database: str = "postgres", user: str = SUPERUSER) -> str:
        """Run SQL through ``psql`` (unaligned, tuples only) and return its output.

        Raises
        ------
        LocalPostgresError
            psql failed (the message carries its stderr).
        """
        proc = subprocess.run(self._psql_cmd(database, user) + ["-A", "-t", "-c", sql],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise LocalPostgresError(f"SQL failed on {database!r}: {proc.stderr.strip()}")
        return proc.stdout.strip()

    def database_exists(self, name: str) -> bool:
        return self.psql(f"SELECT 1 FROM pg_database WHERE datname = {_quote_literal(name)}") == "1"

    def create_database(self, name: str, template: str | None = None) -> None:
        """Create database ``name`` owned by :attr:`user` (a copy of ``template`` if given;
        nobody may be connected to the template)."""
        if not _IDENT.match(name) or (template and not _IDENT.match(template)):
            raise ValueError(f"not a plain PostgreSQL identifier: {name!r} / {template!r}")
        tmpl = f" TEMPLATE {template}" if template else ""
        self.psql(f"CREATE DATABASE {name} OWNER {self.user}{tmpl}")

    def drop_database(self, name: str) -> None:
        if not _IDENT.match(name):
            raise ValueError(f"not a plain PostgreSQL identifier: {name!r}")
        self.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def has_table(self, table: str, database: str | None = None) -> bool:
        """Whether ``public.<table>`` exists in the database (e.g. ``django_migrations``)."""
        out = self.psql(f"SELECT to_regclass({_quote_literal('public.' + table)}) IS NOT NULL",
                        database or self.database)
        return out == "t"

    def dump(self, database: str, path: Path) -> None:
        """Plain-SQL ``pg_dump`` of ``database`` without owners and grants (restorable by
        any role into an empty database of its own)."""
        proc = subprocess.run([str(self.binary("pg_dump")), "-h", str(self.cluster_dir),
                               "-p", str(self.port), "-U", SUPERUSER, "--no-owner",
                               "--no-privileges", "-f", str(path), database],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise LocalPostgresError(f"pg_dump of {database!r} failed: {proc.stderr.strip()}")

    def restore(self, path: Path, database: str | None = None) -> None:
        """Load a :meth:`dump` into ``database`` as :attr:`user` (who then owns the
        objects), in one transaction."""
        proc = subprocess.run(self._psql_cmd(database or self.database, self.user)
                              + ["-1", "-f", str(path)], capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise LocalPostgresError(f"restoring {path} into {database or self.database!r} "
                                     f"failed: {proc.stderr.strip()[-2000:]}")

    def _ensure_role_and_database(self) -> None:
        pw = _quote_literal(self.password)
        self.psql(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
                  f"{_quote_literal(self.user)}) THEN CREATE ROLE {self.user} LOGIN; END IF; "
                  f"END $$; ALTER ROLE {self.user} WITH LOGIN PASSWORD {pw}")
        if not self.database_exists(self.database):
            self.create_database(self.database)


# Label Studio 1.23 talks to PostgreSQL through psycopg 3 (its dependency psycopg[binary]);
# older releases used psycopg2. Either driver serves Django 5.
_PG_DRIVERS = ("psycopg", "psycopg2")


class PostgresLabelStudio(LocalLabelStudio):
    """:class:`~ls_agreement.demo.local_server.LocalLabelStudio` on a :class:`LocalPostgres`
    instead of SQLite (started here if it is not running).

    An empty database is loaded from a cached dump of a migrated one (built once per Label
    Studio version, admin identity and PostgreSQL major version, by a first start that runs
    the migrations: a minute or two); ``data_dir`` then holds only media, exports and the
    log. Parameters are those of ``LocalLabelStudio`` and:

    Parameters
    ----------
    postgres : LocalPostgres
    database : str, optional
        Database of ``postgres`` to use (created, owned by its Label Studio role, when
        missing); default ``postgres.database``.
    """

    def __init__(self, data_dir: Path, port: int = 8089, *, postgres: LocalPostgres,
                 database: str | None = None, **kw: Any) -> None:
        super().__init__(data_dir, port, **kw)
        self.postgres = postgres
        self.database = database or postgres.database

    @property
    def pg_template_path(self) -> Path:
        """Cached plain-SQL dump of a migrated PostgreSQL database holding the admin."""
        key = hashlib.sha1(f"{self.email}\0{self.password}\0{self.token}".encode()).hexdigest()
        return self.home / f"pg{self.postgres.major}-template-{key[:12]}.sql"

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.update(self.postgres.env(self.database))
        return env

    def _token_of(self, user_id: int) -> str | None:
        return self.postgres.psql(f"SELECT key FROM authtoken_token WHERE user_id = {int(user_id)}",
                                  self.database) or None

    def _ensure_pg_driver(self) -> None:
        """Install psycopg into Label Studio's venv if no PostgreSQL driver is there (its
        own dependency; only a venv trimmed by hand would lack it)."""
        py = str(self.venv_dir / "bin" / "python")
        probe = "import importlib.util as u, sys; sys.exit(not any(u.find_spec(m) for m in %r))"
        if subprocess.run([py, "-c", probe % (_PG_DRIVERS,)]).returncode == 0:
            return
        with file_lock(self._lock_path):
            self._run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                       "psycopg[binary]>=3.2,<4"], "install psycopg into Label Studio's venv")

    def ensure_pg_template(self, timeout: float = 600) -> Path | None:
        """The cached dump of a migrated database, built once by a first start on a scratch
        database of :attr:`postgres` (the PostgreSQL twin of ``ensure_template``).

        Returns
        -------
        Path or None
            The dump; None when ``pg_dump`` is missing (each new database then migrates).
        """
        pg = self.postgres
        if not pg.has_binary("pg_dump"):
            return None
        path = self.pg_template_path
        if path.exists():
            return path
        with file_lock(self._lock_path):
            if path.exists():
                return path
            print("Preparing a migrated Label Studio database on PostgreSQL (once; a minute "
                  "or two)...", file=sys.stderr, flush=True)
            scratch_dir = path.with_name(path.stem + ".partial")
            partial = path.with_name(path.name + ".partial")
            shutil.rmtree(scratch_dir, ignore_errors=True)
            scratch_db = "ls_agreement_template_build"
            pg.drop_database(scratch_db)
            pg.create_database(scratch_db)
            try:
                builder = PostgresLabelStudio(scratch_dir, 0, email=self.email,
                                              password=self.password, token=self.token,
                                              cache_dir=self.cache_dir, version=self.version,
                                              postgres=pg, database=scratch_db)
                scratch_dir.mkdir(parents=True)
                builder._launch(timeout)
                builder.stop()
                pg.dump(scratch_db, partial)
                partial.rename(path)
            finally:
                pg.drop_database(scratch_db)
                shutil.rmtree(scratch_dir, ignore_errors=True)
                partial.unlink(missing_ok=True)
        return path

    def _prepare_database(self) -> None:
        """Start the PostgreSQL, create the database, load the migrated template into it
        when it is empty (Label Studio migrates whatever the template lacks at start)."""
        pg = self.postgres
        pg.start()
        self._ensure_pg_driver()
        if not pg.database_exists(self.database):
            pg.create_database(self.database)
        if not pg.has_table("django_migrations", self.database):
            dump = self.ensure_pg_template()
            if dump is not None:
                pg.restore(dump, self.database)
