"""Every package folder installs: a non-editable install (the Dockerfile's ``pip install .``)
takes only the packages setup.cfg lists, so a folder missing there is missing in the image;
and the runtime holds no development infrastructure (docs/design.md, "What ships where")."""
from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_setup_cfg() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}
    found = set()
    for top in ("metrics", "adapters", "plugin", "demo"):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(("ls_agreement", *rel)))
    assert found - listed == set(), "add these to [options] packages in setup.cfg"
    assert listed - found == set(), "setup.cfg lists packages that do not exist"


RUNTIME = ("metrics", "adapters", "plugin")


def _imports(path: Path) -> set[str]:
    """Absolute names a module imports (relative imports resolved against its package)."""
    import ast

    rel = path.relative_to(ROOT).with_suffix("").parts
    package = ["ls_agreement", *rel[:-1]] if rel[-1] != "__init__" else ["ls_agreement", *rel[:-1]]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                out.add(".".join([*base, *(node.module.split(".") if node.module else [])]))
            else:
                out.add(node.module or "")
    return out


def test_the_runtime_holds_no_development_infrastructure() -> None:
    """What serve, worker, sync and report run imports nothing of the demo package or the
    tests, and no launcher of PostgreSQL, Redis or Label Studio is part of it."""
    bad = []
    for top in RUNTIME:
        for py in (ROOT / top).rglob("*.py"):
            for name in _imports(py):
                if name.startswith(("ls_agreement.demo", "tests")):
                    bad.append(f"{py.relative_to(ROOT)} imports {name}")
    assert bad == []
    names = {p.name for top in RUNTIME for p in (ROOT / top).rglob("*.py")}
    assert not names & {"local_postgres.py", "local_redis.py", "server.py", "local_accounts.py",
                        "demo_data.py"}
    # starting a server (Label Studio, PostgreSQL, Redis) or pip takes a subprocess
    launchers = [f"{py.relative_to(ROOT)}" for top in RUNTIME for py in (ROOT / top).rglob("*.py")
                 if "subprocess" in _imports(py)]
    assert launchers == []


def test_the_demo_command_is_offered_only_where_its_package_is() -> None:
    import subprocess
    import sys

    code = ("import sys, importlib.abc\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'ls_agreement.demo' or name.startswith('ls_agreement.demo.'):\n"
            "            raise ModuleNotFoundError(name=name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from ls_agreement.plugin import cli\n"
            "p = cli.build_parser()\n"
            "names = p._subparsers._group_actions[0].choices\n"
            "assert 'demo' not in names and {'report', 'sync', 'serve', 'worker'} <= set(names), names\n"
            "assert cli.main(['report', '--help']) == 0\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    from ls_agreement.plugin import cli
    assert "demo" in cli.build_parser()._subparsers._group_actions[0].choices
