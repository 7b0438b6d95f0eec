"""A local, real Label Studio server for ``ls-agreement demo`` (and the tests).

Label Studio is installed into its **own** cached virtualenv (it pins its own SDK and
Django stack, ≈1 GB), never into the plugin's environment. A migrated data directory is
cached once per Label Studio version and admin identity and copied per run, so a start
costs seconds instead of the minute of migrations. Facts used here (env vars, the
silent port+1 fallback, SIGTERM to the process group) were measured on label-studio
1.23.2; see ``docs/label-studio.md`` §10.

Cache layout (``$LS_AGREEMENT_CACHE`` or ``~/.cache/ls-agreement``)::

    label-studio-<version>/venv/            the virtualenv (marker file when complete)
    label-studio-<version>/template-<key>/  a migrated data dir with the admin + token
    label-studio-<version>.lock             serialises installs/templates across processes
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import httpx

from ls_agreement.plugin.errors import LocalServerError

from .host import free_port, port_in_use, secret_file, tail_log

# The Label Studio release the demo and the tests start; `bash run.sh compat` sets
# LS_AGREEMENT_LS_VERSION to run the server tests against others.
LS_VERSION = os.environ.get("LS_AGREEMENT_LS_VERSION") or "1.23.2"
DEFAULT_EMAIL = "admin@example.com"
DEFAULT_PASSWORD = "ls-agreement-admin"
# Legacy API token of the admin (Label Studio accepts 6..40 characters).
DEFAULT_TOKEN = "ls-agreement-local-admin-token-0001"
LOG_NAME = "ls-agreement-label-studio.log"
SECRET_NAME = "ls-agreement-secret-key"
_INSTALLED_MARKER = ".ls-agreement-installed"
_SERVER_LINE = re.compile(r"Starting development server at (https?://[^\s/]+)")
# Settings are read from LABEL_STUDIO_X, HEARTEX_X and plain X: stray generic names
# in the caller's environment would silently change the server.
_STRIP_ENV = ("USERNAME", "PASSWORD", "HOST", "PORT", "DJANGO_SETTINGS_MODULE",
              "DJANGO_DB", "DATABASE_URL", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME",
              "EXPERIMENTAL_FEATURES")
# Feature-flag overrides: `core.feature_flags.flag_set(name)` first reads the environment
# through `get_bool_env(name)`, i.e. LABEL_STUDIO_<name>, HEARTEX_<name> or plain <name>
# (case-sensitive, lower-case for flags), before LaunchDarkly/offline defaults. Flag names
# start with these prefixes (`all_flags` collects the same ones); stray ones in the
# caller's environment are dropped so only ours reach the server.
_FLAG_PREFIXES = ("ff_", "fflag_", "fflag-", "feat_")
# Lists the "experimental" Data Manager actions (GET /api/dm/actions), among them
# `add_data_field`, which sets one task.data key on many tasks in one request: the bulk
# push-back of plugin/push.py uses it when listed (data_manager/actions/__init__.py).
EXPERIMENTAL_FLAG = "ff_back_experimental_features"
# Database settings of Label Studio on PostgreSQL (core/settings/base.py reads POSTGRE_NAME,
# _USER, _PASSWORD, _HOST, _PORT): stray ones are dropped (the tests' PostgreSQL variant,
# tests/local_postgres.py, sets its own).
_DB_PREFIXES = ("POSTGRE_",)


# kept under its historical name for the callers of this module
LabelStudioError = LocalServerError


def default_cache_dir() -> Path:
    """Cache root: ``$LS_AGREEMENT_CACHE`` or ``~/.cache/ls-agreement``."""
    env = os.environ.get("LS_AGREEMENT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ls-agreement"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock: two processes racing to install wait for each other."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def enable_legacy_tokens(db_path: Path) -> None:
    """Let every organization of a stopped server's SQLite database accept legacy API tokens.

    LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN (environment) does this for new organizations
    from Label Studio 1.18 on; on 1.17 a new organization refuses them (401), so the
    harness sets the organization's own switch, the one its JWT settings page sets. A
    no-op where the switch is on already, or where the release has no JWT settings.
    """
    import sqlite3

    con = sqlite3.connect(db_path)
    try:
        cols = {row[1] for row in con.execute("PRAGMA table_info(jwt_auth_jwtsettings)")}
        if "legacy_api_tokens_enabled" not in cols:
            return
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        org_table = "organization" if "organization" in tables else "organizations_organization"
        orgs = [row[0] for row in con.execute(f"SELECT id FROM {org_table}")]
        for org in orgs:
            if con.execute("UPDATE jwt_auth_jwtsettings SET legacy_api_tokens_enabled = 1 "
                           "WHERE organization_id = ?", (org,)).rowcount:
                continue
            # no row yet (created on first access): one with the model's defaults
            values = {"organization_id": org, "legacy_api_tokens_enabled": 1,
                      "api_tokens_enabled": 1, "api_token_ttl_days": 200 * 365,
                      "created_at": "2000-01-01 00:00:00", "updated_at": "2000-01-01 00:00:00"}
            values = {k: v for k, v in values.items() if k in cols}
            con.execute(f"INSERT INTO jwt_auth_jwtsettings ({', '.join(values)}) "
                        f"VALUES ({', '.join('?' * len(values))})", tuple(values.values()))
        con.commit()
    finally:
        con.close()


class LocalLabelStudio:
    """One Label Studio process on the loopback interface, SQLite in ``data_dir`` (the
    tests run it on PostgreSQL too: ``tests/local_postgres.py``, a subclass).

    Parameters
    ----------
    data_dir : Path
        Data directory of this server. When it holds no database yet, the cached
        migrated template is copied into it; an existing one is reused (the demo's).
    port : int
        Port to ask for; ``0`` picks a free one. Label Studio silently takes port+1
        when the port is busy, so the real address is read from its log.
    email, password, token : str
        Admin created on first start; ``token`` is its legacy API token.
    cache_dir : Path, optional
        Cache root (default :func:`default_cache_dir`).
    version : str
        Label Studio version to install (pinned; the template is keyed by it).
    experimental : bool
        Start with the feature flag ``ff_back_experimental_features`` on (default), so the
        Data Manager lists its experimental actions and the sync writes agreement keys in
        bulk; ``False`` gives a server without them (tests of the per-task fallback).
    """

    def __init__(self, data_dir: Path, port: int = 8089, *, email: str = DEFAULT_EMAIL,
                 password: str = DEFAULT_PASSWORD, token: str = DEFAULT_TOKEN,
                 cache_dir: Path | None = None, version: str = LS_VERSION,
                 experimental: bool = True) -> None:
        if not 6 <= len(token) <= 40:
            raise ValueError(f"Label Studio legacy tokens have 6..40 characters, got {len(token)}")
        self.data_dir = Path(data_dir).resolve()
        self.port = int(port)
        self.email, self.password, self.token = email, password, token
        self.version = version
        self.experimental = bool(experimental)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    # -- paths ---------------------------------------------------------------------
    @property
    def home(self) -> Path:
        return self.cache_dir / f"label-studio-{self.version}"

    @property
    def venv_dir(self) -> Path:
        return self.home / "venv"

    @property
    def executable(self) -> Path:
        return self.venv_dir / "bin" / "label-studio"

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    @property
    def template_dir(self) -> Path:
        # Keyed by the admin identity too: the template already holds that user + token.
        key = hashlib.sha1(f"{self.email}\0{self.password}\0{self.token}".encode()).hexdigest()
        return self.home / f"template-{key[:12]}"

    @property
    def _lock_path(self) -> Path:
        return self.cache_dir / f"label-studio-{self.version}.lock"

    # -- install -------------------------------------------------------------------
    def is_installed(self) -> bool:
        return (self.venv_dir / _INSTALLED_MARKER).exists() and self.executable.exists()

    def ensure_installed(self) -> Path:
        """Install ``label-studio==<version>`` into its own cached venv, once.

        Idempotent; concurrent callers serialise on a lock file and the second one
        finds the install done. A half-finished venv (no marker) is completed by pip.

        Returns
        -------
        Path
            The ``label-studio`` executable.
        """
        if self.is_installed():
            return self.executable
        with file_lock(self._lock_path):
            if self.is_installed():
                return self.executable
            print(f"Installing label-studio=={self.version} into {self.venv_dir} "
                  "(once; takes 3-4 minutes)...", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            # An unmarked venv is an interrupted install: pip completes it in place
            # (fast when everything is there) rather than starting from scratch.
            if not (self.venv_dir / "bin" / "python").exists():
                self._run([sys.executable, "-m", "venv", str(self.venv_dir)],
                          "create the venv")
            pip = [str(self.venv_dir / "bin" / "python"), "-m", "pip", "install", "-q",
                   "--disable-pip-version-check"]
            self._run(pip + ["--upgrade", "pip"], "upgrade pip")
            self._run(pip + [f"label-studio=={self.version}"], "install label-studio")
            (self.venv_dir / _INSTALLED_MARKER).write_text(f"label-studio=={self.version}\n")
            print(f"Installed Label Studio in {time.monotonic() - t0:.0f} s.",
                  file=sys.stderr, flush=True)
        return self.executable

    @staticmethod
    def _run(cmd: list[str], what: str) -> None:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            tail = proc.stdout.decode(errors="replace").splitlines()[-40:]
            raise LabelStudioError(f"could not {what} (exit {proc.returncode}):\n"
                                   + "\n".join(tail))

    # -- template ------------------------------------------------------------------
    def ensure_template(self, timeout: float = 300) -> Path:
        """A migrated data dir holding the admin, cached per version and identity.

        Built by a first start (migrations, admin, organization, token), then stopped.
        """
        self.ensure_installed()
        tmpl = self.template_dir
        if (tmpl / "label_studio.sqlite3").exists():
            return tmpl
        with file_lock(self._lock_path):
            if (tmpl / "label_studio.sqlite3").exists():
                return tmpl
            partial = tmpl.with_name(tmpl.name + ".partial")
            if partial.exists():
                shutil.rmtree(partial)
            print("Preparing a migrated Label Studio database (once; about a minute)...",
                  file=sys.stderr, flush=True)
            builder = LocalLabelStudio(partial, 0, email=self.email, password=self.password,
                                       token=self.token, cache_dir=self.cache_dir,
                                       version=self.version)
            partial.mkdir(parents=True)
            builder._launch(timeout)
            builder.stop()
            enable_legacy_tokens(partial / "label_studio.sqlite3")
            for name in (LOG_NAME, SECRET_NAME):  # each copy gets its own
                (partial / name).unlink(missing_ok=True)
            partial.rename(tmpl)
        return tmpl

    # -- process -------------------------------------------------------------------
    def environment(self) -> dict[str, str]:
        """Environment of the server process (see docs/label-studio.md §10)."""
        env = {k: v for k, v in os.environ.items()
               if k not in _STRIP_ENV
               and not k.startswith(("LABEL_STUDIO_", "HEARTEX_") + _FLAG_PREFIXES + _DB_PREFIXES)}
        env.update({
            "LABEL_STUDIO_BASE_DATA_DIR": str(self.data_dir),
            "LABEL_STUDIO_USERNAME": self.email,
            "LABEL_STUDIO_PASSWORD": self.password,
            "LABEL_STUDIO_USER_TOKEN": self.token,
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "SSRF_PROTECTION_ENABLED": "false",  # webhooks to 127.0.0.1 are refused otherwise
            "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "",
            "COLLECT_ANALYTICS": "false",
            "APP_WEBSERVER": "uwsgi",
            EXPERIMENTAL_FLAG: "true" if self.experimental else "false",
            # Stable per data dir: JWTs (personal access tokens) are signed with it, and
            # Label Studio would otherwise draw a new one at every start.
            "SECRET_KEY": self._secret_key(),
            "PATH": f"{self.venv_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        })
        return env

    def _secret_key(self) -> str:
        return secret_file(self.data_dir / SECRET_NAME, 48)

    def start(self, timeout: float = 180) -> None:
        """Start the server and wait until ``GET /health`` answers UP.

        Installs Label Studio and builds the template when needed (minutes, once).

        Raises
        ------
        LabelStudioError
            The process died or did not become healthy within ``timeout`` seconds;
            the message carries the last 40 log lines.
        """
        if self._proc is not None and self._proc.poll() is None:
            return
        self.ensure_installed()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._prepare_database()
        self._launch(timeout)

    def _prepare_database(self) -> None:
        """A migrated database before the start: the cached template's SQLite copied in
        when the data dir has none."""
        if not (self.data_dir / "label_studio.sqlite3").exists():
            tmpl = self.ensure_template()
            shutil.copytree(tmpl, self.data_dir, dirs_exist_ok=True)

    def _launch(self, timeout: float) -> None:
        port = self.port or free_port()
        if port_in_use(port):
            # Label Studio would silently move to port+1; tell the user where it went.
            print(f"port {port} is busy; Label Studio will pick the next free one",
                  file=sys.stderr)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        offset = log.tell()
        cmd = [str(self.executable), "start", "--no-browser", "--internal-host", "127.0.0.1",
               "--port", str(port), "--data-dir", str(self.data_dir)]
        self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=self.environment(),
                                      cwd=str(self.data_dir), start_new_session=True)
        log.close()
        try:
            self.url = self._wait_ready(offset, timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, offset: int, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        url = ""
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LabelStudioError(
                    f"Label Studio exited with code {self._proc.returncode} while starting; "
                    f"last lines of {self.log_path}:\n{tail_log(self.log_path)}")
            if not url:
                with open(self.log_path, "rb") as fh:
                    fh.seek(offset)
                    m = _SERVER_LINE.search(fh.read().decode(errors="replace"))
                if m:
                    url = m.group(1).replace("0.0.0.0", "127.0.0.1")
            if url:
                try:
                    r = httpx.get(f"{url}/health", timeout=2)
                    if r.is_success and r.json().get("status") == "UP":
                        return url
                except (httpx.HTTPError, ValueError):
                    pass
            time.sleep(0.5)
        raise LabelStudioError(f"Label Studio did not become healthy within {timeout:.0f} s; "
                               f"last lines of {self.log_path}:\n{tail_log(self.log_path)}")

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def wait(self) -> int:
        """Block until the server process exits (the demo's "keep running")."""
        return self._proc.wait() if self._proc else 0

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``timeout`` seconds."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        # uwsgi workers may outlive the master: clean up the whole group either way.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)

    def __enter__(self) -> "LocalLabelStudio":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- the admin's side: its SDK client, users and tokens (the tests act as several
    # annotators of one local server) ------------------------------------------------------
    def client(self) -> Any:
        """SDK client (label_studio_sdk.LabelStudio) authenticated as the admin."""
        from label_studio_sdk import LabelStudio
        if not self.url:
            raise LabelStudioError("Label Studio is not started")
        return LabelStudio(base_url=self.url, api_key=self.token)

    def create_user(self, email: str, first_name: str = "", last_name: str = "") -> int:
        """Create an organization member (or return the id of an existing one).

        ``POST /api/users/`` (SDK ``users.create``) makes the user a member of the
        caller's organization, so annotations imported with ``completed_by=<id>`` are
        attributed to them.
        """
        client = self.client()
        for user in client.users.list():
            if (user.email or "").lower() == email.lower():
                return int(user.id)
        user = client.users.create(username=email, email=email, first_name=first_name,
                                   last_name=last_name)
        return int(user.id)

    def user_token(self, user_id: int) -> str:
        """The legacy API token of a user of this local server (to act as that user).

        Label Studio creates one for every new user (users/models.py, post_save on User)
        but shows it only to the user themself (``GET /api/current-user/token``), and
        users made by :meth:`create_user` have no password to log in with; so it is read
        from this server's own database (``authtoken_token``, :meth:`_token_of`).

        Raises
        ------
        LabelStudioError
            The user has no token (or the database cannot be read).
        """
        key = self._token_of(int(user_id))
        if not key:
            raise LabelStudioError(f"user {user_id} has no API token on {self.url}")
        return key

    def _token_of(self, user_id: int) -> str | None:
        """``authtoken_token.key`` of a user, read-only from the server's SQLite."""
        import sqlite3

        db_path = self.data_dir / "label_studio.sqlite3"
        try:
            db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
            try:
                row = db.execute("SELECT key FROM authtoken_token WHERE user_id = ?",
                                 (int(user_id),)).fetchone()
            finally:
                db.close()
        except sqlite3.Error as exc:
            raise LabelStudioError(f"cannot read tokens from {db_path}: {exc}") from exc
        return str(row[0]) if row else None

    def create_personal_access_token(self) -> str:
        """A personal access token (refresh JWT) for the admin.

        ``POST /api/token/`` issues one (switched on first if the organization's JWT
        settings disable them). Label Studio allows one live token per user and shows it
        only once (409 afterwards), so it is kept in the data dir and reused.
        """
        saved = self.data_dir / "ls-agreement-admin-pat.txt"
        if saved.exists():
            return saved.read_text().strip()
        client = self.client()
        settings = client.jwt_settings.get()
        if not settings.api_tokens_enabled:
            client.jwt_settings.update(
                api_tokens_enabled=True,
                legacy_api_tokens_enabled=True,
                api_token_ttl_days=settings.api_token_ttl_days or 30)
        from label_studio_sdk.core.api_error import ApiError
        try:
            token = client.tokens.create().token
        except ApiError as exc:
            raise LabelStudioError(
                f"Label Studio refused a personal access token ({exc.status_code}): the "
                f"admin already has one that was not saved in {saved}") from exc
        if not token:
            raise LabelStudioError("Label Studio returned no personal access token")
        saved.write_text(token + "\n")
        saved.chmod(0o600)
        return token
