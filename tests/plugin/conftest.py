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

from ls_agreement.plugin.server import LocalLabelStudio

SERVER_FIXTURES = {"ls_server", "ls_client", "ls_pat", "annotators", "make_project"}
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
