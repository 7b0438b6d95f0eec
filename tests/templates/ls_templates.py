"""The labeling templates the installed Label Studio ships, read from its package.

Label Studio 1.23.2 keeps them as ``label_studio/annotation_templates/<group>/<name>/
config.yml`` (keys ``title``, ``type``, ``group``, ``image``, ``details``, ``config``: the
labeling config XML, often followed by an example task in an XML comment). The package
lives in the venv the test fixtures install (:class:`ls_agreement.demo.local_server.
LocalLabelStudio`); it is installed here the same way when missing, unless
``LS_AGREEMENT_NO_SERVER`` is set (offline development).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["Template", "templates_dir", "load_templates"]


@dataclass(frozen=True)
class Template:
    """One shipped template: ``key`` is ``<group>/<name>`` (its folder), ``config`` the XML."""

    key: str
    title: str
    config: str


def _find(venv: Path) -> Path | None:
    hits = sorted(venv.glob("lib/python3*/site-packages/label_studio/annotation_templates"))
    return hits[0] if hits else None


def templates_dir() -> tuple[Path | None, str]:
    """``(folder of the templates, "")``, or ``(None, why not)``.

    Installs Label Studio into its cached venv when it is missing (3-4 minutes, once),
    exactly as the server fixtures of ``tests/plugin/conftest.py`` do.
    """
    from ls_agreement.demo.local_server import LocalLabelStudio

    server = LocalLabelStudio(Path(tempfile.gettempdir()), port=0)
    found = _find(server.venv_dir) if server.is_installed() else None
    if found is not None:
        return found, ""
    if os.environ.get("LS_AGREEMENT_NO_SERVER"):
        return None, (f"Label Studio is not installed in {server.venv_dir} and "
                      "LS_AGREEMENT_NO_SERVER is set (offline): its templates cannot be read")
    try:
        server.ensure_installed()
    except Exception as exc:  # noqa: BLE001 - any install failure becomes the skip reason
        return None, f"could not install Label Studio to read its templates: {exc}"
    found = _find(server.venv_dir)
    if found is None:
        return None, f"no annotation_templates folder in {server.venv_dir}"
    return found, ""


def load_templates(folder: Path) -> list[Template]:
    """Every ``<group>/<name>/config.yml`` under ``folder``, sorted by key."""
    out: list[Template] = []
    for path in sorted(folder.glob("*/*/config.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        key = f"{path.parent.parent.name}/{path.parent.name}"
        out.append(Template(key, str(doc.get("title", key)), str(doc["config"])))
    return out
