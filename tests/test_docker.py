"""Static checks of ``docker/`` — there is no Docker engine on the development machine or
in CI, so the compose file and the Dockerfile are never built or started. What can be
checked without an engine is checked here, by one checker (:func:`check_stack`) that
returns a list of problems:

* both files parse (PyYAML; a small Dockerfile parser: continuation lines, comments, the
  JSON (exec) form of CMD/ENTRYPOINT);
* every service's command, entrypoint and healthcheck program exists in its image (our
  image: Python base + the console scripts of the package and its dependencies; the
  official images: a table of what they ship, :data:`IMAGES`), Python one-liners compile
  and import only what the image has;
* the ``ls-agreement`` commands name real sub-commands and are accepted by the real
  argparse parser, with the service's environment (the CLI reads its defaults from it);
* ports agree: what serve binds = what is published = EXPOSE = its healthcheck = the URL
  given to ``connect``; Label Studio 8080, Redis 6379 and PostgreSQL 5432 versus the URLs
  and ``POSTGRE_PORT`` pointing at them; hosts are the services' names;
* the environment: every ``${VAR}`` is listed in ``docker/.env.example`` (and nothing stale
  is), secrets are only interpolated (``${VAR:?…}``, never literal), the names given to
  ls-agreement are read by its code, the names given to Label Studio by its code (when its
  source is installed locally);
* ``depends_on`` targets exist, have healthchecks and form no cycle; Redis runs with the
  append-only file and ``appendfsync always``; the Dockerfile's COPY sources exist and
  survive ``Dockerfile.dockerignore``, it runs as a non-root user.

Every check is shown to fail on a broken copy (:data:`BREAKAGES`). Two healthchecks run for
real against local stand-ins (a ``redis-server``, a tiny HTTP server): the worker's and
serve's, the two this project wrote.
"""
from __future__ import annotations

import ast
import configparser
import contextlib
import copy
import functools
import http.server
import importlib.metadata as md
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping
from unittest import mock
from urllib.parse import urlsplit

import pytest
import yaml          # the `test` extra lists PyYAML: a missing one fails loudly, not skips

from ls_agreement.plugin import cli
from ls_agreement.plugin.server import LS_VERSION

ROOT = Path(__file__).resolve().parents[1]
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


# -- the checker ------------------------------------------------------------------------------
def check_stack(compose_raw: dict[str, Any], dockerfile_text: str, env_example_text: str,
                dockerignore_text: str | None = None) -> list[str]:
    """Every problem found in the compose file + Dockerfile + .env.example, as sentences."""
    problems: list[str] = []
    add = problems.append

    # Dockerfile ------------------------------------------------------------------------------
    try:
        instructions = parse_dockerfile(dockerfile_text)
    except ValueError as exc:
        return [f"Dockerfile: {exc}"]
    patterns = dockerignore_patterns(dockerignore_text) if dockerignore_text else []
    by_kw: dict[str, list[Instruction]] = {}
    for ins in instructions:
        by_kw.setdefault(ins.keyword, []).append(ins)
    if not instructions or instructions[0].keyword not in ("FROM", "ARG") or "FROM" not in by_kw:
        add("Dockerfile: must start with FROM")
    for ins in by_kw.get("COPY", []) + by_kw.get("ADD", []):
        words = ins.exec_form or shlex.split(ins.args)
        if any(w.startswith("--from") for w in words):
            continue
        for src in [w for w in words if not w.startswith("--")][:-1]:
            path = ROOT / src
            if not path.exists():
                add(f"Dockerfile line {ins.line}: COPY source {src!r} does not exist in the "
                    "build context (the repository root)")
                continue
            files = [path] if path.is_file() else [
                p for p in path.rglob("*.py") if "__pycache__" not in p.parts]
            lost = [str(p.relative_to(ROOT)) for p in files
                    if ignored(str(p.relative_to(ROOT)), patterns)]
            if lost:
                add(f"Dockerfile line {ins.line}: COPY source {src!r} is excluded by "
                    f"Dockerfile.dockerignore ({', '.join(lost[:3])}…)")
    if dockerignore_text is not None and not ignored(".venv/bin/python", patterns):
        add("Dockerfile.dockerignore must exclude .venv (it would be sent as build context)")
    if not any(re.search(r"\bpip install (\S+ )*\.(\s|$)", i.args) for i in by_kw.get("RUN", [])):
        add("Dockerfile: no `pip install .`: the package would not be in the image")
    users = by_kw.get("USER", [])
    user = users[-1].args.split(":")[0] if users else "root"
    if user in ("root", "0"):
        add("Dockerfile: runs as root: add a USER (an unprivileged one)")
    elif not any(re.search(rf"useradd\b.*\b{re.escape(user)}\b", i.args)
                 for i in by_kw.get("RUN", [])):
        add(f"Dockerfile: USER {user} is never created (useradd)")
    image_entry: list[str] = []
    image_cmd: list[str] = []
    for kw in ("ENTRYPOINT", "CMD"):
        if kw not in by_kw:
            continue
        ins = by_kw[kw][-1]
        if ins.exec_form is None:
            # shell form: sh -c is PID 1 and SIGTERM never reaches the worker's warm shutdown
            add(f"Dockerfile line {ins.line}: {kw} must use the exec (JSON) form")
        elif kw == "ENTRYPOINT":
            image_entry = ins.exec_form
        else:
            image_cmd = ins.exec_form
    if image_entry and image_entry[0] not in own_console_scripts():
        add(f"Dockerfile: ENTRYPOINT {image_entry[0]!r} is not a console script of setup.cfg")
    exposed = {int(p.split("/")[0]) for i in by_kw.get("EXPOSE", []) for p in i.args.split()}
    if image_entry == ["ls-agreement"] and image_cmd:
        _, err = parse_cli(image_cmd, {})
        if err:
            add(f"Dockerfile: CMD {image_cmd} does not parse: {err}")

    # compose: structure -----------------------------------------------------------------------
    if not isinstance(compose_raw, dict) or not isinstance(compose_raw.get("services"), dict):
        return problems + ["compose: no `services` mapping"]
    example = parse_env_example(env_example_text)
    # environment names ----------------------------------------------------------------------
    used: set[str] = set()
    for s in walk_strings(compose_raw):
        for var, op, arg in variables(s):
            used.add(var)
            if var not in example:
                add(f"compose: ${{{var}}} is not listed in docker/.env.example")
            elif op in (":?", "?") and (example[var][1] or example[var][0]):
                add(f"docker/.env.example: {var} is required: it must be listed uncommented "
                    "and empty (no default secret)")
    for var in sorted(set(example) - used):
        add(f"docker/.env.example: {var} is not used by the compose file")
    for name, svc in compose_raw["services"].items():
        for key, value in env_of(svc).items():
            if not SECRET_NAME.search(key) or value.lower() in ("true", "false"):
                continue
            refs = variables(value)
            whole = re.fullmatch(r"\$\{[^}]*\}", value.strip())
            if not whole or not refs or (refs[0][1] in (":-", "-") and refs[0][2]):
                add(f"{name}: {key} is a literal secret or has a default: use ${{VAR:?…}}")
    for s in walk_strings(compose_raw):
        for pw in re.findall(r"://[^/@\s:]*:([^@/\s]+)@", s):
            if not re.fullmatch(r"\$\{[^}]*\}", pw):
                add(f"compose: literal password in URL {s!r}")
    env = sample_env(example)
    try:
        compose = interpolate_tree(compose_raw, env)
    except MissingVariable as exc:
        return problems + [f"compose: does not interpolate with .env.example filled in: {exc}"]
    services: dict[str, dict[str, Any]] = compose["services"]
    raw_services: dict[str, dict[str, Any]] = compose_raw["services"]
    for name in SERVICES:
        if name not in services:
            add(f"compose: service {name!r} is missing")

    # which image each service runs, and its programs
    role: dict[str, str] = {}
    programs: dict[str, set[str]] = {}
    default_port: dict[str, int] = {}
    for name, svc in services.items():
        if "build" in svc:
            build = svc["build"] if isinstance(svc["build"], dict) else {"context": svc["build"]}
            context = (COMPOSE.parent / build.get("context", ".")).resolve()
            dockerfile = context / build.get("dockerfile", "Dockerfile")
            if context != ROOT:
                add(f"{name}: build context {context} is not the repository root")
            if dockerfile.resolve() != DOCKERFILE.resolve():
                add(f"{name}: builds {dockerfile}, not docker/Dockerfile")
            role[name], programs[name] = LOCAL, local_programs()
            continue
        image = str(svc.get("image", ""))
        repo, _, tag = image.partition(":")
        facts = IMAGES.get(repo)
        if facts is None:
            add(f"{name}: image {image!r} is neither built here nor a known image")
            continue
        role[name], programs[name], default_port[name] = (facts["role"], facts["programs"],
                                                          facts["port"])
        if facts["role"] == "label-studio" and tag != LS_VERSION:
            add(f"{name}: image tag {tag!r}, but the project is tested against Label Studio "
                f"{LS_VERSION} (plugin/server.py LS_VERSION)")
    by_role: dict[str, list[str]] = {}
    for name, r in role.items():
        by_role.setdefault(r, []).append(name)

    # commands, entrypoints, healthchecks: programs exist, Python compiles ----------------------
    modules = local_modules()
    cli_args: dict[str, Any] = {}
    for name, svc in services.items():
        if name not in role:
            continue
        progs = programs[name]
        entry = argv_of(svc.get("entrypoint")) or (image_entry if role[name] == LOCAL else [])
        cmd = argv_of(svc.get("command")) or (image_cmd if role[name] == LOCAL else [])
        argv = entry + cmd
        if argv and argv[0] not in progs:
            add(f"{name}: command program {argv[0]!r} is not in the image {sorted(progs)}")
        if argv[:1] == ["ls-agreement"]:
            sub = argv[1] if len(argv) > 1 else None
            if sub not in cli.COMMANDS:
                add(f"{name}: unknown ls-agreement sub-command {sub!r} "
                    f"(plugin/cli.py COMMANDS: {sorted(cli.COMMANDS)})")
            else:
                ns, err = parse_cli(argv[1:], env_of(svc))
                if err:
                    add(f"{name}: `{' '.join(argv)}` does not parse: {err}")
                else:
                    cli_args[name] = ns
        hc = health_argv(svc)
        if hc is None:
            add(f"{name}: has no healthcheck")
            continue
        kind, hargv = hc
        if kind == "CMD-SHELL" and "sh" not in progs:
            add(f"{name}: CMD-SHELL healthcheck, but the image has no sh")
        words = [w for w in hargv if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
        if not words or words[0] not in progs:
            add(f"{name}: healthcheck program {words[:1]} is not in the image {sorted(progs)}")
        code = python_code(words)
        if code is not None:
            try:
                mods = imported_modules(code)
            except SyntaxError as exc:
                add(f"{name}: healthcheck Python does not compile: {exc}")
            else:
                allowed = set(sys.stdlib_module_names) | (modules if role[name] == LOCAL else set())
                for m in sorted(mods - allowed):
                    add(f"{name}: healthcheck imports {m!r}, not installed in the image")
        if kind == "CMD-SHELL":
            raw_hc = json.dumps(raw_services[name].get("healthcheck", {}).get("test"))
            for var in re.findall(r"\$\$\{?([A-Za-z_][A-Za-z0-9_]*)", raw_hc):
                if var not in env_of(svc):
                    add(f"{name}: healthcheck uses ${var}, not set in the service's environment")

    # depends_on -----------------------------------------------------------------------------
    graph: dict[str, list[str]] = {}
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        deps = {d: {} for d in deps} if isinstance(deps, list) else deps
        graph[name] = list(deps)
        for target, opts in deps.items():
            if target not in services:
                add(f"{name}: depends_on unknown service {target!r}")
            elif (opts or {}).get("condition") == "service_healthy" \
                    and health_argv(services[target]) is None:
                add(f"{name}: waits for {target!r} to be healthy, but it has no healthcheck")

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        for nxt in graph.get(node, []):
            found = cycle_from(nxt, path + [node])
            if found:
                return found
        return None
    for name in graph:
        found = cycle_from(name, [])
        if found:
            add(f"compose: depends_on cycle {' -> '.join(found)}")
            break

    # Redis: durability, password ------------------------------------------------------------
    redis_port: dict[str, int] = {}
    redis_pass: dict[str, str | None] = {}
    for name in by_role.get("redis", []):
        argv = argv_of(services[name].get("command"))
        pairs = {a: b for a, b in zip(argv, argv[1:])}
        if pairs.get("--appendonly") != "yes" or pairs.get("--appendfsync") != "always":
            add(f"{name}: redis-server must run with --appendonly yes --appendfsync always "
                "(acknowledged webhook events must survive a Redis restart)")
        redis_port[name] = int(pairs.get("--port", default_port[name]))
        redis_pass[name] = pairs.get("--requirepass")
        if redis_pass[name] and env_of(services[name]).get("REDISCLI_AUTH") != redis_pass[name]:
            add(f"{name}: --requirepass is set, so its `redis-cli ping` healthcheck needs "
                "REDISCLI_AUTH with the same password")

    # PostgreSQL <-> Label Studio ------------------------------------------------------------
    pg_port = {name: int(env_of(services[name]).get("PGPORT", default_port[name]))
               for name in by_role.get("postgres", [])}
    for name in by_role.get("label-studio", []):
        lenv = env_of(services[name])
        if lenv.get("DJANGO_DB") != "default":
            add(f"{name}: DJANGO_DB must be 'default' (Label Studio's PostgreSQL entry)")
        if lenv.get("ff_back_experimental_features", "").lower() != "true":
            add(f"{name}: ff_back_experimental_features must be \"true\" (the bulk "
                "add_data_field action)")
        host = lenv.get("POSTGRE_HOST")
        if host not in pg_port:
            add(f"{name}: POSTGRE_HOST {host!r} is not a postgres service")
        else:
            if str(pg_port[host]) != lenv.get("POSTGRE_PORT", "5432"):
                add(f"{name}: POSTGRE_PORT {lenv.get('POSTGRE_PORT')!r}, but PostgreSQL "
                    f"listens on {pg_port[host]}")
            penv = env_of(services[host])
            for ls_key, pg_key, default in (("POSTGRE_USER", "POSTGRES_USER", "postgres"),
                                            ("POSTGRE_NAME", "POSTGRES_DB", None),
                                            ("POSTGRE_PASSWORD", "POSTGRES_PASSWORD", None)):
                want = penv.get(pg_key) or (penv.get("POSTGRES_USER", "postgres")
                                            if pg_key == "POSTGRES_DB" else default)
                if lenv.get(ls_key) != want:
                    add(f"{name}: {ls_key} does not match {host}'s {pg_key}")
            if "postgres" not in graph.get(name, []) and host not in graph.get(name, []):
                add(f"{name}: does not depend on {host}")
        hurls = urls_in(health_argv(services[name])[1] if health_argv(services[name]) else [])
        for u in hurls:
            if url_port(u) != default_port[name]:
                add(f"{name}: healthcheck {u} is not Label Studio's port {default_port[name]}")
        if default_port[name] not in container_ports(services[name]):
            add(f"{name}: Label Studio's port {default_port[name]} is not published")

    # ls-agreement services: URLs, ports, secret ---------------------------------------------
    for name, ns in cli_args.items():
        svc = services[name]
        sub = argv_of(svc.get("command")) or image_cmd
        sub_cmd = sub[0] if sub else None
        url = getattr(ns, "url", None)
        if url is not None or sub_cmd in ("serve", "worker"):
            host = urlsplit(url or "").hostname
            if host not in by_role.get("label-studio", []):
                add(f"{name}: LABEL_STUDIO_URL/--url {url!r}: {host!r} is not a Label Studio "
                    "service")
            elif url_port(url) != default_port[host]:
                add(f"{name}: LABEL_STUDIO_URL {url!r}, but Label Studio listens on "
                    f"{default_port[host]}")
            if not getattr(ns, "token", None):
                add(f"{name}: no Label Studio token (LABEL_STUDIO_API_KEY / --token)")
        if sub_cmd in ("serve", "worker"):
            queue = getattr(ns, "queue", None)
            host = urlsplit(queue or "").hostname
            if not queue or host not in redis_port:
                add(f"{name}: queue {queue!r} is not a redis:// URL of a Redis service")
            else:
                if url_port(queue) != redis_port[host]:
                    add(f"{name}: queue {queue!r}, but Redis listens on {redis_port[host]}")
                if redis_pass[host] and urlsplit(queue).password != redis_pass[host]:
                    add(f"{name}: queue URL password is not {host}'s --requirepass")
            for dep in (by_role.get("redis", []) + by_role.get("label-studio", [])):
                if dep not in graph.get(name, []):
                    add(f"{name}: does not depend on {dep}")
        if sub_cmd == "serve":
            if ns.host not in ("127.0.0.1", "::1", "localhost") and not ns.secret:
                add(f"{name}: serve on {ns.host} without a webhook secret "
                    "(LS_AGREEMENT_WEBHOOK_SECRET): it refuses to start")
            ports = container_ports(svc)
            if ns.port not in ports:
                add(f"{name}: serve binds port {ns.port}, the service publishes container "
                    f"ports {ports}")
            if ns.port not in exposed:
                add(f"{name}: serve binds port {ns.port}, the Dockerfile EXPOSEs {sorted(exposed)}")
            hc = health_argv(svc)
            hurls = urls_in(hc[1]) if hc else []
            if not hurls:
                add(f"{name}: healthcheck does not query serve's /health")
            for u in hurls:
                parts = urlsplit(u)
                if url_port(u) != ns.port or parts.path != "/health" \
                        or parts.hostname not in ("127.0.0.1", "localhost"):
                    add(f"{name}: healthcheck {u} is not serve's http://127.0.0.1:{ns.port}/health")
            public = env_of(svc).get("LS_AGREEMENT_PUBLIC_URL")
            if public and (urlsplit(public).hostname != name or url_port(public) != ns.port):
                add(f"{name}: LS_AGREEMENT_PUBLIC_URL {public!r} is not http://{name}:{ns.port}")
        if sub_cmd == "worker":
            if svc.get("ports"):
                add(f"{name}: a scaled service (replicas) cannot publish fixed host ports")
            raw_replicas = str((raw_services[name].get("deploy") or {}).get("replicas", ""))
            if not variables(raw_replicas):
                add(f"{name}: deploy.replicas should come from an environment variable "
                    "(e.g. ${LS_AGREEMENT_WORKERS:-2})")
            else:
                try:
                    if int(interpolate(raw_replicas, env)) < 1:
                        raise ValueError
                except ValueError:
                    add(f"{name}: deploy.replicas {raw_replicas!r} is not a positive number")
    if "/health" not in re.findall(r"@api\.get\(\"([^\"]+)\"",
                                   (ROOT / "plugin" / "web.py").read_text(encoding="utf-8")):
        add("plugin/web.py has no GET /health route for serve's healthcheck")

    for name in by_role.get("redis", []):
        argv = argv_of(raw_services[name].get("command"))
        if "--requirepass" in argv and not variables(argv[argv.index("--requirepass") + 1]):
            add(f"{name}: literal --requirepass")
    source = package_source()
    for name in by_role.get(LOCAL, []):
        for key in env_of(services[name]):
            if f'"{key}"' not in source and f"'{key}'" not in source:
                add(f"{name}: environment {key} is not read anywhere in the package")
    return problems


def check_label_studio_env(compose_raw: dict[str, Any], ls_source: str) -> list[str]:
    """The names given to Label Studio are read by it: ``get_env(NAME)`` also reads
    ``LABEL_STUDIO_NAME`` and ``HEARTEX_NAME``, so the prefix may be dropped in the source."""
    problems = []
    for name, svc in compose_raw["services"].items():
        if not str(svc.get("image", "")).startswith("heartexlabs/label-studio"):
            continue
        for key in env_of(svc):
            bare = re.sub(r"^(LABEL_STUDIO_|HEARTEX_)", "", key)
            if not any(f"'{k}'" in ls_source or f'"{k}"' in ls_source for k in {key, bare}):
                problems.append(f"{name}: Label Studio {LS_VERSION} reads no {key}")
    return problems


# -- tests ----------------------------------------------------------------------------------
def _load() -> tuple[dict[str, Any], str, str, str | None]:
    return (yaml.safe_load(COMPOSE.read_text(encoding="utf-8")),
            DOCKERFILE.read_text(encoding="utf-8"), ENV_EXAMPLE.read_text(encoding="utf-8"),
            DOCKERIGNORE.read_text(encoding="utf-8") if DOCKERIGNORE.exists() else None)


def test_worker_command_exists() -> None:
    """The compose file runs `ls-agreement worker`; without it the command check below fails."""
    if "worker" not in cli.COMMANDS:
        pytest.skip("`ls-agreement worker` is not in plugin/cli.py COMMANDS yet: the worker "
                    "service's command cannot be checked against the real parser")


def test_stack_is_consistent() -> None:
    if "worker" not in cli.COMMANDS:
        pytest.skip("`ls-agreement worker` is not in plugin/cli.py COMMANDS yet")
    problems = check_stack(*_load())
    assert problems == [], "\n".join(problems)


def test_documented_connect_command_parses_in_the_serve_container() -> None:
    """`docker compose exec ls-agreement ls-agreement connect --project 1` (the compose
    file's header, the README): receiver, queue and secret all come from the environment."""
    compose, _, example, _ = _load()
    svc = interpolate_tree(compose, sample_env(parse_env_example(example)))["services"]
    ns, err = parse_cli(["connect", "--project", "1"], env_of(svc["ls-agreement"]))
    assert err is None, err
    assert ns.receiver == "http://ls-agreement:8765" and ns.queue.startswith("redis://")
    assert ns.secret and ns.url and ns.token


def test_label_studio_reads_every_name_given_to_it() -> None:
    ls_source = label_studio_source()
    if ls_source is None:
        pytest.skip(f"Label Studio {LS_VERSION} is not installed under ~/.cache/ls-agreement "
                    "(`bash run.sh demo` installs it)")
    compose, *_ = _load()
    assert check_label_studio_env(compose, ls_source) == []
    broken = copy.deepcopy(compose)
    broken["services"]["label-studio"]["environment"]["POSTGRES_HOST"] = "postgres"  # wrong
    assert any("POSTGRES_HOST" in p for p in check_label_studio_env(broken, ls_source))


def test_compose_refuses_to_start_without_secrets() -> None:
    """Leaving any one required secret out (or empty) stops compose, naming it."""
    compose, _, example, _ = _load()
    env = sample_env(parse_env_example(example))
    required = {v for s in walk_strings(compose) for v, op, _ in variables(s) if op == ":?"}
    assert {"POSTGRES_PASSWORD", "REDIS_PASSWORD", "LS_ADMIN_PASSWORD", "LS_API_TOKEN",
            "LS_SECRET_KEY", "LS_AGREEMENT_WEBHOOK_SECRET"} <= required
    for name in required:
        for without in ({k: v for k, v in env.items() if k != name}, {**env, name: ""}):
            with pytest.raises(MissingVariable, match=f"^{name}: "):
                interpolate_tree(compose, without)
    # and the defaults of the optional names are used when unset
    svc = interpolate_tree(compose, env)["services"]
    assert svc["worker"]["deploy"]["replicas"] == "2"
    assert interpolate_tree(compose, {**env, "LS_AGREEMENT_WORKERS": "5"}
                            )["services"]["worker"]["deploy"]["replicas"] == "5"


def test_interpolation_rules() -> None:
    env = {"A": "a", "E": ""}
    assert interpolate("$$A ${A} $A ${B:-d} ${E:-d} ${E-d} ${A:+x} ${B:+x}", env) == "$A a a d d  x "
    with pytest.raises(MissingVariable, match="E: set it"):
        interpolate("${E:?set it}", env)
    assert interpolate("${E?set it}", env) == ""


def test_dockerfile_parser() -> None:
    text = ('# comment\nFROM python:3.11-slim\nRUN a \\\n    # dropped comment\n    && b\n'
            'CMD ["serve", "--port", "1"]\nENTRYPOINT ls-agreement serve\n')
    ins = parse_dockerfile(text)
    assert [(i.keyword, i.line) for i in ins] == [("FROM", 2), ("RUN", 3), ("CMD", 6),
                                                  ("ENTRYPOINT", 7)]
    assert ins[1].args == "a && b"
    assert ins[2].exec_form == ["serve", "--port", "1"] and ins[3].exec_form is None
    with pytest.raises(ValueError, match="unknown instruction"):
        parse_dockerfile("FORM python\n")
    with pytest.raises(ValueError, match="continued line"):
        parse_dockerfile("FROM x\nRUN a \\\n")


def test_dockerignore_rules() -> None:
    pats = dockerignore_patterns("*\n!plugin\n**/__pycache__\n")
    assert ignored(".venv/bin/python", pats) and ignored("tests/x.py", pats)
    assert not ignored("plugin/queue/rq_worker.py", pats)
    assert ignored("plugin/__pycache__/x.pyc", pats)


# Each entry breaks one thing in a copy of the real files; the checker must say so.
Compose = dict[str, Any]


def _svc(c: Compose, name: str) -> dict[str, Any]:
    return c["services"][name]


def _env(c: Compose, name: str) -> dict[str, Any]:
    svc = _svc(c, name)
    svc["environment"] = dict(svc["environment"])    # YAML anchors share the mapping
    return svc["environment"]


def _sub_in(c: Compose, name: str, old: str, new: str) -> None:
    hc = _svc(c, name)["healthcheck"]
    hc["test"] = [t.replace(old, new) for t in hc["test"]]


BREAKAGES: list[tuple[str, Callable[[Compose], Any] | None, Callable[[str], str] | None,
                      Callable[[str], str] | None, str]] = [
    # (id, compose mutation, Dockerfile mutation, .env.example mutation, expected message)
    ("unknown-subcommand", lambda c: _svc(c, "ls-agreement").update(command=["serv"]),
     None, None, "unknown ls-agreement sub-command 'serv'"),
    ("bad-option", lambda c: _svc(c, "worker").update(command=["worker", "--bogus"]),
     None, None, "does not parse"),
    ("curl-not-in-image", lambda c: _svc(c, "ls-agreement")["healthcheck"].update(
        test=["CMD", "curl", "-f", "http://127.0.0.1:8765/health"]),
     None, None, "healthcheck program ['curl'] is not in the image"),
    ("published-port", lambda c: _svc(c, "ls-agreement").update(ports=["8765:9000"]),
     None, None, "serve binds port 8765, the service publishes container ports [9000]"),
    ("serve-port", lambda c: _svc(c, "ls-agreement").update(
        command=["serve", "--host", "0.0.0.0", "--port", "9000"]),
     None, None, "the Dockerfile EXPOSEs [8765]"),
    ("health-port", lambda c: _sub_in(c, "ls-agreement", ":8765/", ":8000/"),
     None, None, "is not serve's http://127.0.0.1:8765/health"),
    ("public-url", lambda c: _env(c, "ls-agreement").update(
        LS_AGREEMENT_PUBLIC_URL="http://ls-agreement:9999"), None, None,
     "LS_AGREEMENT_PUBLIC_URL"),
    ("ls-url-port", lambda c: _env(c, "worker").update(
        LABEL_STUDIO_URL="http://label-studio:8081"),
     None, None, "but Label Studio listens on 8080"),
    ("ls-url-host", lambda c: _env(c, "ls-agreement").update(
        LABEL_STUDIO_URL="http://labelstudio:8080"),
     None, None, "'labelstudio' is not a Label Studio service"),
    ("ls-health-port", lambda c: _sub_in(c, "label-studio", ":8080/", ":8000/"),
     None, None, "is not Label Studio's port 8080"),
    ("queue-port", lambda c: _env(c, "worker").update(
        LS_AGREEMENT_QUEUE="redis://:${REDIS_PASSWORD:?x}@redis:6380/0"),
     None, None, "but Redis listens on 6379"),
    ("queue-missing", lambda c: _env(c, "ls-agreement").pop("LS_AGREEMENT_QUEUE"),
     None, None, "queue None is not a redis:// URL"),
    ("postgres-port", lambda c: _env(c, "label-studio").update(POSTGRE_PORT="5433"),
     None, None, "but PostgreSQL listens on 5432"),
    ("postgres-user", lambda c: _env(c, "label-studio").update(POSTGRE_USER="someone"),
     None, None, "POSTGRE_USER does not match postgres's POSTGRES_USER"),
    ("django-db", lambda c: _env(c, "label-studio").update(DJANGO_DB="sqlite"),
     None, None, "DJANGO_DB must be 'default'"),
    ("bulk-flag", lambda c: _env(c, "label-studio").pop("ff_back_experimental_features"),
     None, None, "ff_back_experimental_features"),
    ("ls-version", lambda c: _svc(c, "label-studio").update(
        image="heartexlabs/label-studio:1.22.0"), None, None, "tested against Label Studio"),
    ("unknown-image", lambda c: _svc(c, "redis").update(image="valkey/valkey:8"),
     None, None, "neither built here nor a known image"),
    ("env-not-read", lambda c: _env(c, "worker").update(LS_AGREEMENT_TYPO="1"),
     None, None, "LS_AGREEMENT_TYPO is not read anywhere in the package"),
    ("var-not-listed", lambda c: _env(c, "worker").update(X_NEW="${NEW_VAR:-1}"),
     None, None, "${NEW_VAR} is not listed in docker/.env.example"),
    ("literal-secret", lambda c: _env(c, "ls-agreement").update(
        LS_AGREEMENT_WEBHOOK_SECRET="hunter2"), None, None,
     "LS_AGREEMENT_WEBHOOK_SECRET is a literal secret"),
    ("default-secret", lambda c: _env(c, "postgres").update(
        POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-postgres}"), None, None,
     "POSTGRES_PASSWORD is a literal secret or has a default"),
    ("literal-url-password", lambda c: _env(c, "worker").update(
        LS_AGREEMENT_QUEUE="redis://:pw@redis:6379/0"), None, None, "literal password in URL"),
    ("no-secret", lambda c: _env(c, "ls-agreement").pop("LS_AGREEMENT_WEBHOOK_SECRET"),
     None, None, "without a webhook secret"),
    ("depends-unknown", lambda c: _svc(c, "worker")["depends_on"].update(
        cache={"condition": "service_started"}), None, None,
     "depends_on unknown service 'cache'"),
    ("depends-unhealthy", lambda c: _svc(c, "redis").pop("healthcheck"), None, None,
     "waits for 'redis' to be healthy, but it has no healthcheck"),
    ("depends-cycle", lambda c: _svc(c, "redis").update(depends_on=["worker"]),
     None, None, "depends_on cycle"),
    ("no-healthcheck", lambda c: _svc(c, "worker").pop("healthcheck"),
     None, None, "worker: has no healthcheck"),
    ("redis-fsync", lambda c: _svc(c, "redis").update(
        command=["redis-server", "--appendonly", "yes", "--requirepass", "${REDIS_PASSWORD:?x}"]),
     None, None, "--appendonly yes --appendfsync always"),
    ("redis-auth", lambda c: _env(c, "redis").pop("REDISCLI_AUTH"),
     None, None, "needs REDISCLI_AUTH"),
    ("pg-health-var", lambda c: _svc(c, "postgres")["healthcheck"].update(
        test=["CMD-SHELL", "pg_isready -U $$PGUSER"]), None, None,
     "healthcheck uses $PGUSER, not set"),
    ("health-import", lambda c: _sub_in(c, "worker", "import os,", "import psutil,os,"),
     None, None, "healthcheck imports 'psutil', not installed"),
    ("health-syntax", lambda c: _sub_in(c, "worker", "sys.exit(", "sys.exit(("),
     None, None, "does not compile"),
    ("worker-ports", lambda c: _svc(c, "worker").update(ports=["8766:8766"]),
     None, None, "cannot publish fixed host ports"),
    ("worker-replicas", lambda c: _svc(c, "worker").update(deploy={"replicas": 2}),
     None, None, "deploy.replicas should come from an environment variable"),
    ("missing-service", lambda c: c["services"].pop("postgres"), None, None,
     "service 'postgres' is missing"),
    ("copy-missing", None, lambda d: d.replace("COPY plugin ./plugin",
                                               "COPY plugins ./plugin"), None,
     "COPY source 'plugins' does not exist"),
    ("dockerignore", None, None, None, "is excluded by Dockerfile.dockerignore"),
    ("root-user", None, lambda d: d.replace("USER lsa", "USER root"), None, "runs as root"),
    ("shell-entrypoint", None, lambda d: d.replace('ENTRYPOINT ["ls-agreement"]',
                                                   "ENTRYPOINT ls-agreement"), None,
     "ENTRYPOINT must use the exec (JSON) form"),
    ("no-pip-install", None, lambda d: d.replace("pip install .", "pip install -r x.txt"),
     None, "no `pip install .`"),
    ("expose", None, lambda d: d.replace("EXPOSE 8765", "EXPOSE 9000"), None,
     "the Dockerfile EXPOSEs [9000]"),
    ("bad-cmd", None, lambda d: d.replace('CMD ["serve",', 'CMD ["serve", "--nope",'), None,
     "Dockerfile: CMD"),
    ("bad-instruction", None, lambda d: d.replace("WORKDIR /data", "WORKDIRR /data"), None,
     "unknown instruction"),
    ("example-default", None, None,
     lambda e: e.replace("POSTGRES_PASSWORD=\n", "POSTGRES_PASSWORD=postgres\n"),
     "POSTGRES_PASSWORD is required: it must be listed uncommented and empty"),
    ("example-stale", None, None, lambda e: e + "OLD_THING=\n",
     "OLD_THING is not used by the compose file"),
    ("example-missing", None, None, lambda e: e.replace("REDIS_PASSWORD=\n", ""),
     "${REDIS_PASSWORD} is not listed in docker/.env.example"),
]


@pytest.mark.parametrize("case", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_each_check_can_fail(case: tuple[Any, ...]) -> None:
    if "worker" not in cli.COMMANDS:
        pytest.skip("`ls-agreement worker` is not in plugin/cli.py COMMANDS yet")
    ident, mutate_compose, mutate_dockerfile, mutate_example, expected = case
    compose, dockerfile, example, ignore = _load()
    compose = copy.deepcopy(compose)
    if mutate_compose:
        mutate_compose(compose)
    if mutate_dockerfile:
        dockerfile = mutate_dockerfile(dockerfile)
    if mutate_example:
        example = mutate_example(example)
    if ident == "dockerignore":
        assert ignore is not None
        ignore = ignore.replace("!plugin\n", "")
    problems = check_stack(compose, dockerfile, example, ignore)
    assert any(expected in p for p in problems), f"{expected!r} not in:\n" + "\n".join(problems)


# -- two healthchecks, run for real -----------------------------------------------------------
def _health_code(service: str) -> str:
    compose, *_ = _load()
    kind, argv = health_argv(compose["services"][service])   # type: ignore[misc]
    code = python_code(argv)
    assert kind == "CMD" and code
    return code


@contextlib.contextmanager
def _worker_and_health(tmp_path: Path
                       ) -> Iterator[tuple[str, Callable[[], int], Callable[[], Any]]]:
    """A local redis-server, and ``(url, health, start)``: its URL; run the worker service's healthcheck
    against it; start a real ``ls-agreement worker`` on it, as the compose service does
    (queue from LS_AGREEMENT_QUEUE), returning once the healthcheck says healthy."""
    from ls_agreement.plugin.local_redis import LocalRedis, redis_binary
    if redis_binary() is None:
        pytest.skip("no redis-server here (apt-get install redis-server)")
    code = _health_code("worker")
    procs: list[subprocess.Popen[bytes]] = []
    with LocalRedis(tmp_path / "redis") as server:
        env = {**os.environ, "LS_AGREEMENT_QUEUE": server.url}

        def health() -> int:
            return subprocess.run([sys.executable, "-c", code], timeout=60, env=env,
                                  capture_output=True).returncode

        def start() -> subprocess.Popen[bytes]:
            # Label Studio is not contacted until a job arrives: an unreachable URL will do
            proc = subprocess.Popen(
                [sys.executable, "-m", "ls_agreement.plugin.cli", "worker", "--quiet", "--url",
                 "http://127.0.0.1:9", "--token", "unused", "--out", str(tmp_path / "out")],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            procs.append(proc)
            deadline = time.monotonic() + 90      # importing numpy/scipy/pandas takes a while
            while health() != 0:
                assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the worker never registered in Redis"
                time.sleep(0.5)
            return proc
        try:
            yield server.url, health, start
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


@pytest.mark.slow
def test_worker_healthcheck_follows_a_real_worker(tmp_path: Path) -> None:
    """The worker's healthcheck against a real ``ls-agreement worker``: unhealthy before it
    registers, healthy once it has (whatever pid it has, as long as it is this host's);
    another host's worker in the same Redis does not count, nor a deregistered one."""
    from redis import Redis
    from rq import Queue, SimpleWorker
    with _worker_and_health(tmp_path) as (url, health, start):
        assert health() == 1
        r = Redis.from_url(url)
        other = SimpleWorker([Queue("ls-agreement", connection=r)], connection=r,
                             name="ls-agreement-some-other-host-1")
        other.register_birth()
        assert health() == 1
        proc = start()
        assert health() == 0
        proc.kill()
        proc.wait()
        # a SIGKILLed worker leaves its registration until RQ's TTL; in a container the
        # process is PID 1, so the container is gone with it. Deregistered = unhealthy:
        for w in SimpleWorker.all(connection=r):
            w.register_death()
        assert health() == 1


@pytest.mark.slow
def test_worker_stops_on_sigterm_as_docker_stop_sends(tmp_path: Path) -> None:
    """``docker stop`` sends SIGTERM: the worker must leave (warm shutdown, exit 0) and
    deregister, well within the compose file's stop_grace_period."""
    with _worker_and_health(tmp_path) as (_, health, start):
        proc = start()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            rc = None
        assert rc == 0, "the worker did not exit within 15 s of SIGTERM"
        assert health() == 1


def test_serve_healthcheck_follows_the_health_status() -> None:
    """200 UP -> healthy; 503 DEGRADED (no worker registered) -> unhealthy."""
    code = _health_code("ls-agreement")
    state = {"status": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:              # noqa: N802 - http.server's name
            body = json.dumps({"status": "UP" if state["status"] == 200 else "DEGRADED"})
            self.send_response(state["status"] if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        local = code.replace("127.0.0.1:8765", f"127.0.0.1:{httpd.server_address[1]}")
        assert local != code

        def run() -> int:
            return subprocess.run([sys.executable, "-c", local], timeout=30,
                                  capture_output=True).returncode
        assert run() == 0
        state["status"] = 503
        assert run() != 0
    finally:
        httpd.shutdown()
        httpd.server_close()
