"""Fixtures running a real Label Studio (no mocks of its API).

The first run installs label-studio into its own cached venv (3-4 min) and builds a
migrated template (~1 min); later sessions start in a few seconds. Every test that uses
one of these fixtures is marked ``server`` automatically, so ``-m "not server"`` skips
them; ``LS_AGREEMENT_NO_SERVER=1`` skips them too (offline development only — CI runs them).

Fixtures
--------
ls_server      session  started :class:`LocalLabelStudio` (``.url``, ``.token``, ``.data_dir``)
ls_client      session  ``label_studio_sdk.LabelStudio`` authenticated as the admin (legacy token)
ls_pat         session  a personal access token (refresh JWT) of the same admin
redis_server   function a real ``redis-server`` (:class:`LocalRedis`: ``.url``, ``.restart()``)
annotators     session  5 organization members: ``[{"id": int, "email": str}, ...]``
make_project   function ``make_project(config_xml, tasks, title=None) -> project id``;
                        tasks are task dicts (``{"data": ..., "annotations": [...]}``) or
                        plain data dicts; annotations' ``completed_by`` is a user id.
                        Projects are deleted after the test.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.local_redis import LocalRedis
from ls_agreement.demo.local_server import LocalLabelStudio

SERVER_FIXTURES = {"ls_server", "ls_client", "ls_pat", "annotators", "make_project",
                   "redis_server"}
ANNOTATOR_EMAILS = [f"annotator{i}@example.com" for i in range(1, 6)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="LS_AGREEMENT_NO_SERVER is set")
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)
            if os.environ.get("LS_AGREEMENT_NO_SERVER"):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def ls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLabelStudio]:
    server = LocalLabelStudio(tmp_path_factory.mktemp("label-studio"), port=0)
    server.start(timeout=300)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[LocalRedis]:
    """A real ``redis-server`` (AOF on, fsync always) in the test's own folder, loopback
    port; a fresh one per test, so restarts and kills stay inside the test."""
    server = LocalRedis(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ls_client(ls_server: LocalLabelStudio) -> Any:
    return ls_server.client()


@pytest.fixture(scope="session")
def ls_pat(ls_server: LocalLabelStudio) -> str:
    return ls_server.create_personal_access_token()


@pytest.fixture(scope="session")
def annotators(ls_server: LocalLabelStudio) -> list[dict[str, Any]]:
    return [{"id": ls_server.create_user(email, first_name=f"Annotator{i}", last_name="Test"),
             "email": email}
            for i, email in enumerate(ANNOTATOR_EMAILS, start=1)]


def create_project(client: Any, config_xml: str, tasks: list[dict[str, Any]],
                   title: str = "ls-agreement test") -> int:
    """Create a project and import ``tasks`` (with their annotations) into it."""
    project = client.projects.create(title=title, label_config=config_xml)
    payload = [t if "data" in t else {"data": t} for t in tasks]
    if payload:
        client.projects.import_tasks(id=project.id, request=payload)
    return int(project.id)


@pytest.fixture
def make_project(ls_client: Any) -> Iterator[Callable[..., int]]:
    created: list[int] = []

    def factory(config_xml: str, tasks: list[dict[str, Any]], title: str | None = None) -> int:
        pid = create_project(ls_client, config_xml, tasks,
                             title or f"ls-agreement test {len(created) + 1}")
        created.append(pid)
        return pid

    yield factory
    for pid in created:
        try:
            ls_client.projects.delete(id=pid)
        except Exception:  # noqa: BLE001 - cleanup must not mask the test's own failure
            pass


# -- Label Studio on PostgreSQL ----------------------------------------------------------
# Marked `server` (and skipped by LS_AGREEMENT_NO_SERVER) like the SQLite fixtures.
SERVER_FIXTURES.add("postgres_label_studio")


@pytest.fixture(scope="session")
def postgres_label_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLabelStudio]:
    """A second Label Studio, on PostgreSQL (experimental features on, so the Data
    Manager lists ``add_data_field``, which takes its ``jsonb_set`` path there).

    The PostgreSQL is Debian's (``/usr/lib/postgresql/<major>/bin``; ``bash run.sh test``
    apt-installs it when run as root): a cluster of its own on a free loopback port, run as
    the ``postgres`` system user when we are root, removed at the end. The server's
    ``.postgres`` is the :class:`~tests.local_postgres.LocalPostgres`. The
    first session migrates a database and caches its dump next to Label Studio's venv (a
    minute or two); later ones restore it (seconds). Skipped, with the reason, only when
    no PostgreSQL server binaries can be found.
    """
    from tests.local_postgres import LocalPostgres, LocalPostgresError, PostgresLabelStudio, find_bin_dir

    try:
        find_bin_dir()
    except LocalPostgresError as exc:
        pytest.skip(str(exc))
    pg = LocalPostgres(tmp_path_factory.mktemp("postgres"), port=0)
    server = PostgresLabelStudio(tmp_path_factory.mktemp("label-studio-pg"), port=0,
                                 experimental=True, postgres=pg)
    try:
        pg.start()
        server.start(timeout=900)   # the first ever start migrates PostgreSQL
        yield server
    finally:
        server.stop()
        pg.remove()
