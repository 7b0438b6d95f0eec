"""The files of ``docker/`` read without an engine: compose interpolation, a small
Dockerfile and .dockerignore parser, what the package and its image offer, and helpers
over a compose service. Used by :mod:`.checker` and the tests."""
from __future__ import annotations

import ast
import configparser
import contextlib
import functools
import importlib.metadata as md
import io
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping
from unittest import mock
from urllib.parse import urlsplit

from ls_agreement.plugin import cli
from ls_agreement.demo.local_server import LS_VERSION

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "docker-compose.yml"
DOCKERFILE = DOCKER / "Dockerfile"
DOCKERIGNORE = DOCKER / "Dockerfile.dockerignore"
ENV_EXAMPLE = DOCKER / ".env.example"
PACKAGE_DIRS = ("plugin", "adapters", "metrics")

# What the official images ship, as far as these files use them (static knowledge, checked
# against the images' Dockerfiles, not against a running container): programs on PATH, the
# port the server listens on by default.
IMAGES: dict[str, dict[str, Any]] = {
    "postgres": {"programs": {"sh", "pg_isready", "psql", "postgres", "docker-entrypoint.sh"},
                 "port": 5432, "role": "postgres"},
    "redis": {"programs": {"sh", "redis-server", "redis-cli", "docker-entrypoint.sh"},
              "port": 6379, "role": "redis"},
    # python-slim based: python3 and the label-studio script; no curl guaranteed
    "heartexlabs/label-studio": {"programs": {"sh", "bash", "python3", "label-studio"},
                                 "port": 8080, "role": "label-studio"},
}
# python:3.11-slim (our FROM) has these; the rest of our image's PATH is console scripts
BASE_PROGRAMS = {"sh", "bash", "python", "python3", "pip"}
LOCAL = "ls-agreement (docker/Dockerfile)"
SERVICES = ("postgres", "redis", "label-studio", "ls-agreement", "worker")
# env names whose value is a credential: never a literal in the compose file
SECRET_NAME = re.compile(r"(PASSWORD|TOKEN|SECRET|KEY|AUTH)$")
_VAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}"
                  r"|([A-Za-z_][A-Za-z0-9_]*))")
_URL = re.compile(r"[a-z]+://[^\s'\"]+")


# -- compose interpolation ------------------------------------------------------------------
class MissingVariable(ValueError):
    """A ``${VAR:?message}`` whose variable is unset (or empty, for ``:?``)."""


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Substitute variables as ``docker compose`` does (``$$`` is a literal ``$``)."""
    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return "$"
        name, op, arg = m.group(2) or m.group(5), m.group(3), m.group(4) or ""
        value = env.get(name)
        empty = value is None or (op is not None and op.startswith(":") and value == "")
        if op in (":-", "-"):
            return arg if empty else value           # type: ignore[return-value]
        if op in (":?", "?"):
            if empty:
                raise MissingVariable(f"{name}: {arg}")
            return value                               # type: ignore[return-value]
        if op in (":+", "+"):
            return "" if empty else arg
        return value or ""
    return _VAR.sub(sub, text)


def variables(text: str) -> list[tuple[str, str | None, str]]:
    """``(name, operator, argument)`` of every variable reference (``$$`` excluded)."""
    return [(m.group(2) or m.group(5), m.group(3), m.group(4) or "")
            for m in _VAR.finditer(text) if not m.group(1)]


def walk_strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from walk_strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk_strings(v)


def interpolate_tree(obj: Any, env: Mapping[str, str]) -> Any:
    if isinstance(obj, str):
        return interpolate(obj, env)
    if isinstance(obj, dict):
        return {k: interpolate_tree(v, env) for k, v in obj.items()}
    if isinstance(obj, list):
        return [interpolate_tree(v, env) for v in obj]
    return obj


def parse_env_example(text: str) -> dict[str, tuple[str, bool]]:
    """``NAME -> (value, commented)`` of ``NAME=value`` lines, ``# NAME=value`` included."""
    out: dict[str, tuple[str, bool]] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(#\s*)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if m:
            out[m.group(2)] = (m.group(3).strip(), bool(m.group(1)))
    return out


def sample_env(example: Mapping[str, tuple[str, bool]]) -> dict[str, str]:
    """What a user's docker/.env would hold: every uncommented name filled in (URL-safe
    values, as .env.example asks), the commented (optional) ones left to their defaults."""
    return {name: value or f"sample-{name.lower().replace('_', '-')}"
            for name, (value, commented) in example.items() if not commented}


# -- Dockerfile -----------------------------------------------------------------------------
INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK",
                "SHELL", "MAINTAINER"}


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int
    exec_form: list[str] | None = None   # the JSON array of CMD/ENTRYPOINT/RUN/COPY, if any


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions of a Dockerfile: ``\\`` continues a line, ``#`` lines are comments (also
    between continued lines, as Docker drops them there); a JSON array argument is parsed."""
    out: list[Instruction] = []
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buf):
            continue
        if not buf:
            start = n
        if stripped.endswith("\\"):
            buf.append(stripped[:-1].strip())
            continue
        buf.append(stripped)
        logical = " ".join(p for p in buf if p)
        buf = []
        keyword, _, args = logical.partition(" ")
        if keyword.upper() not in INSTRUCTIONS:
            raise ValueError(f"line {start}: unknown instruction {keyword!r}")
        exec_form = None
        if args.strip().startswith("["):
            try:
                exec_form = json.loads(args)
            except json.JSONDecodeError:
                exec_form = None      # Docker then runs it in the shell form
        out.append(Instruction(keyword.upper(), args.strip(), start, exec_form))
    if buf:
        raise ValueError(f"line {start}: the file ends inside a continued line")
    return out


def dockerignore_patterns(text: str) -> list[tuple[bool, re.Pattern[str]]]:
    """``(negated, regex)`` per pattern of a .dockerignore file, in order."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        pat = line[1:].strip() if neg else line
        pat = pat.lstrip("/").removeprefix("./").rstrip("/")
        rx, i = "", 0
        while i < len(pat):
            if pat.startswith("**/", i):
                rx, i = rx + "(?:.*/)?", i + 3
            elif pat.startswith("**", i):
                rx, i = rx + ".*", i + 2
            elif pat[i] == "*":
                rx, i = rx + "[^/]*", i + 1
            elif pat[i] == "?":
                rx, i = rx + "[^/]", i + 1
            else:
                rx, i = rx + re.escape(pat[i]), i + 1
        out.append((neg, re.compile(rx)))
    return out


def ignored(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    excluded = False
    for neg, rx in patterns:
        if any(rx.fullmatch(p) for p in prefixes):
            excluded = not neg
    return excluded


# -- what the package and its image offer ---------------------------------------------------
def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def _cfg_lines(value: str) -> list[str]:
    return [ln.split("#", 1)[0].strip() for ln in value.splitlines()
            if ln.split("#", 1)[0].strip()]


@functools.lru_cache(maxsize=None)
def install_requires() -> list[str]:
    names = []
    for req in _cfg_lines(_setup_cfg()["options"]["install_requires"]):
        m = re.match(r"[A-Za-z0-9_.-]+", req)
        if m:
            names.append(m.group(0))
    return names


@functools.lru_cache(maxsize=None)
def own_console_scripts() -> set[str]:
    cfg = _setup_cfg()
    lines = _cfg_lines(cfg["options.entry_points"].get("console_scripts", ""))
    return {ln.split("=", 1)[0].strip() for ln in lines}


@functools.lru_cache(maxsize=None)
def local_programs() -> set[str]:
    """Programs on our image's PATH: the base's, ours, those of our direct dependencies."""
    progs = set(BASE_PROGRAMS) | own_console_scripts()
    for name in install_requires():
        with contextlib.suppress(md.PackageNotFoundError):
            progs |= {ep.name for ep in md.distribution(name).entry_points
                      if ep.group == "console_scripts"}
    return progs


@functools.lru_cache(maxsize=None)
def local_modules() -> set[str]:
    """Top-level modules importable in our image beside the standard library."""
    wanted = {re.sub(r"[-_.]+", "-", n).lower() for n in install_requires()}
    mods = {"ls_agreement"}
    for mod, dists in md.packages_distributions().items():
        if any(re.sub(r"[-_.]+", "-", d).lower() in wanted for d in dists):
            mods.add(mod)
    return mods


@functools.lru_cache(maxsize=None)
def package_source() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for d in PACKAGE_DIRS
                     for p in (ROOT / d).rglob("*.py"))


def label_studio_source() -> str | None:
    """Label Studio 1.23.2's Python source, when `run.sh` installed it here (else None)."""
    cache = Path(os.environ.get("LS_AGREEMENT_CACHE", Path.home() / ".cache" / "ls-agreement"))
    hits = sorted((cache / f"label-studio-{LS_VERSION}").glob(
        "venv/lib/python*/site-packages/label_studio"))
    if not hits:
        return None
    return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                     for p in hits[0].rglob("*.py") if "/tests/" not in str(p))


# -- helpers over a compose service ---------------------------------------------------------
def env_of(service: Mapping[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def container_ports(service: Mapping[str, Any]) -> list[int]:
    out = []
    for p in service.get("ports") or []:
        if isinstance(p, dict):
            out.append(int(p["target"]))
        else:
            out.append(int(str(p).split("/")[0].rsplit(":", 1)[-1]))
    return out


def argv_of(value: Any) -> list[str]:
    if value is None:
        return []
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def health_argv(service: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """``(kind, argv)`` of the healthcheck: kind CMD (exec) or CMD-SHELL (``sh -c``)."""
    hc = service.get("healthcheck") or {}
    test = hc.get("test")
    if not test or hc.get("disable"):
        return None
    if isinstance(test, str):
        return "CMD-SHELL", shlex.split(test)
    kind, rest = test[0], [str(t) for t in test[1:]]
    if kind == "NONE":
        return None
    if kind == "CMD-SHELL":
        return kind, shlex.split(" ".join(rest))
    return kind, rest


def python_code(argv: list[str]) -> str | None:
    if argv and re.fullmatch(r"python3?(\.\d+)?", Path(argv[0]).name) and "-c" in argv:
        return argv[argv.index("-c") + 1]
    return None


def imported_modules(code: str) -> set[str]:
    mods = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module.split(".")[0])
    return mods


def urls_in(strings: list[str]) -> list[str]:
    return [u for s in strings for u in _URL.findall(s)]


def url_port(url: str) -> int | None:
    parts = urlsplit(url)
    return parts.port or {"http": 80, "https": 443, "redis": 6379}.get(parts.scheme)


@contextlib.contextmanager
def only_env(env: Mapping[str, str]) -> Iterator[None]:
    """os.environ = exactly ``env`` (the CLI reads its defaults from it when the parser is
    built); the developer's own LABEL_STUDIO_URL etc. must not leak into the check."""
    with mock.patch.dict(os.environ, dict(env), clear=True):
        yield


def parse_cli(argv: list[str], env: Mapping[str, str]) -> tuple[Any, str | None]:
    """(namespace, None) or (None, argparse's complaint) for ``ls-agreement argv…``."""
    err = io.StringIO()
    with only_env(env), contextlib.redirect_stderr(err):
        try:
            return cli.build_parser().parse_args(argv), None
        except SystemExit:
            return None, err.getvalue().strip().splitlines()[-1] if err.getvalue() else "exit"
