"""The label-studio-sdk floor: declared once in setup.cfg and checked by the client before any
call, so an old SDK reads as an installation problem, never as a refused token."""
from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

from ls_agreement.plugin import client
from ls_agreement.plugin.errors import EXIT_INTERNAL, AuthError, IncompatibleSDK, exit_code

ROOT = Path(__file__).resolve().parents[2]


def test_setup_cfg_declares_the_floor_the_client_checks() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    reqs = cfg["options"]["install_requires"]
    m = re.search(r"label-studio-sdk>=([\d.]+)", reqs)
    assert m and m.group(1) == client.SDK_FLOOR


@pytest.mark.parametrize("old", ["1.0.5", "1.0.20", "2.0.4", "2.1.1"])
def test_an_older_sdk_is_named_not_blamed_on_the_token(monkeypatch: pytest.MonkeyPatch, old: str) -> None:
    monkeypatch.setattr(client, "sdk_version", lambda: old)
    with pytest.raises(IncompatibleSDK) as info:
        client.Connection("http://127.0.0.1:9", "0123456789abcdef")
    assert not isinstance(info.value, AuthError)
    assert old in str(info.value) and client.SDK_FLOOR in str(info.value)
    assert exit_code(info.value) == EXIT_INTERNAL


def test_the_installed_sdk_passes() -> None:
    client.check_sdk()
