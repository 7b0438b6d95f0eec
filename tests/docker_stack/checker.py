"""One checker over the compose file, the Dockerfile and ``.env.example``: every problem
found, as sentences (see :mod:`.test_stack` for what is checked)."""
from __future__ import annotations

import json
import re
import shlex
import sys
from typing import Any
from urllib.parse import urlsplit


from ls_agreement.plugin import cli
from ls_agreement.demo.local_server import LS_VERSION

from .files import (COMPOSE, DOCKERFILE, IMAGES, Instruction, LOCAL, MissingVariable, ROOT,
    SECRET_NAME, SERVICES, argv_of, container_ports, dockerignore_patterns, env_of, health_argv,
    ignored, imported_modules, interpolate, interpolate_tree, local_modules, local_programs,
    own_console_scripts, package_source, parse_cli, parse_dockerfile, parse_env_example,
    python_code, sample_env, url_port, urls_in, variables, walk_strings)


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
