"""The admin's side of a local Label Studio: its SDK client, users and tokens.

Mixed into :class:`~.local_server.LocalLabelStudio`; the tests act as several annotators of one
local server, so they need users, each user's legacy token (read from the server's own
database: Label Studio shows it only to the user) and the admin's personal access token.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ls_agreement.plugin.errors import LocalServerError as LabelStudioError


class LocalAccounts:
    """Users and tokens of one running local server (``url``, admin ``token``)."""

    url: str
    token: str
    data_dir: Path

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
