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

import contextlib
import copy
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml          # the `test` extra lists PyYAML: a missing one fails loudly, not skips

from ls_agreement.plugin import cli
from ls_agreement.demo.local_server import LS_VERSION

from .checker import check_label_studio_env, check_stack
from .files import (COMPOSE, DOCKERFILE, DOCKERIGNORE, ENV_EXAMPLE, MissingVariable,
    dockerignore_patterns, env_of, health_argv, ignored, interpolate, interpolate_tree,
    label_studio_source, parse_cli, parse_dockerfile, parse_env_example, python_code, sample_env,
    variables, walk_strings)


# -- tests ----------------------------------------------------------------------------------
def _load() -> tuple[dict[str, Any], str, str, str | None]:
    return (yaml.safe_load(COMPOSE.read_text(encoding="utf-8")),
            DOCKERFILE.read_text(encoding="utf-8"), ENV_EXAMPLE.read_text(encoding="utf-8"),
            DOCKERIGNORE.read_text(encoding="utf-8") if DOCKERIGNORE.exists() else None)


def test_worker_command_exists() -> None:
    """The compose file's `worker` service runs `ls-agreement worker` (the image's entry
    point), and that command parses with the real parser in the service's environment,
    its queue taken from there."""
    compose, dockerfile, example, _ = _load()
    entry = next(i.exec_form for i in parse_dockerfile(dockerfile) if i.keyword == "ENTRYPOINT")
    assert entry == ["ls-agreement"]
    assert "worker" in cli.COMMANDS
    svc = interpolate_tree(compose, sample_env(parse_env_example(example)))["services"]["worker"]
    argv = svc.get("command")
    assert isinstance(argv, list) and argv[:1] == ["worker"], argv
    ns, err = parse_cli(argv, env_of(svc))
    assert err is None, err
    assert ns.queue.startswith("redis://") and ns.url and ns.token


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
    from tests.local_redis import LocalRedis, redis_binary
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
