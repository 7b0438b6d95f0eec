"""What Label Studio's own config validator accepts, ``parse_config`` accepts.

Label Studio 1.23.2 validates a labeling config with
``label_studio.core.label_config.validate_label_config`` (what the project API calls when
a config is saved: XML, its JSON schema, unique names, every ``toName`` naming a tag, and
label-studio-sdk's tag attribute checks). It is run here in Label Studio's own venv (the
one the server fixtures install), on every template the installed package ships — read
from the package at test time, never copied — and on configs Label Studio accepts that
our parser used to refuse (a Rating without ``toName``, a nameless Relations, an
``<Image valueList>``, a toName naming a control, a maxRating that is no number).

"Accepted" by ``parse_config`` means: it returns a config, or it refuses with
:class:`~ls_agreement.adapters.errors.Unmeasured` (a valid config in which nothing is
measured, exit 2 saying so) — never "invalid labeling config". Configs Label Studio
refuses are refused by ``parse_config`` too.
"""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError, Unmeasured

# Run with Label Studio's python: every shipped template's config, then the extra configs
# (read as JSON from stdin), each validated as Label Studio validates a saved config.
_LS_SIDE = r'''
import glob, json, os, sys
import yaml
import label_studio
sys.path.insert(0, os.path.dirname(label_studio.__file__))
from django.conf import settings
settings.configure()          # the validator reads no setting; no database, no network
from label_studio.core.label_config import validate_label_config

root = os.path.join(os.path.dirname(label_studio.__file__), "annotation_templates")
cases = {}
for path in sorted(glob.glob(os.path.join(root, "*", "*", "config.yml"))):
    with open(path, encoding="utf-8") as f:
        cases["template:" + "/".join(path.split(os.sep)[-3:-1])] = yaml.safe_load(f)["config"]
cases.update(json.load(sys.stdin))
out = {}
for key, xml in cases.items():
    try:
        validate_label_config(xml)
        out[key] = {"config": xml, "error": None}
    except Exception as exc:
        out[key] = {"config": xml, "error": f"{type(exc).__name__}: {exc}"}
print(json.dumps(out))
'''

_TEXTS = "<Text name='a' value='$a'/><Text name='b' value='$b'/>"
EXTRA = {
    # accepted by Label Studio
    "rating without toName, two objects": f"<View>{_TEXTS}<Rating name='r'/></View>",
    "rectangles without toName, two images": "<View><Image name='a' value='$a'/><Image name='b' value='$b'/>"
                                             "<RectangleLabels name='r'><Label value='X'/></RectangleLabels>"
                                             "<Choices name='c' toName='a'><Choice value='x'/></Choices></View>",
    "relations without a name": "<View><Relations><Relation value='x'/></Relations><Text name='t' value='$t'/>"
                                "<Labels name='l' toName='t'><Label value='A'/></Labels></View>",
    "image valueList": "<View><RectangleLabels name='r' toName='pdf'><Label value='Title'/></RectangleLabels>"
                       "<Image valueList='$pages' name='pdf'/></View>",
    "choices on choices": "<View><Text name='t' value='$t'/><Choices name='a' toName='t'><Choice value='x'/>"
                          "</Choices><Choices name='b' toName='a'><Choice value='y'/></Choices></View>",
    "maxRating not a number": "<View><Text name='t' value='$t'/><TextArea name='n' toName='t'/>"
                              "<Rating name='r' toName='t' maxRating='many'/></View>",
    "unknown control tag": "<View><Text name='t' value='$t'/><Sparkles name='s' toName='t'/>"
                           "<TextArea name='c' toName='t'/></View>",
    "no control at all": "<View><Text name='t' value='$t'/></View>",
    "ocr labels on a pdf": "<View><OcrLabels name='ocr' toName='pdf'><Label value='Typo'/></OcrLabels>"
                           "<Pdf name='pdf' value='$pdf'/></View>",
    # refused by Label Studio
    "toName naming no tag": "<View><Text name='t' value='$t'/><Choices name='a' toName='nothing'>"
                            "<Choice value='x'/></Choices></View>",
    "empty toName": "<View><Text name='t' value='$t'/><Rating name='r' toName=''/></View>",
    "duplicate names": "<View><Text name='t' value='$t'/><TextArea name='c' toName='t'/>"
                       "<TextArea name='c' toName='t'/></View>",
    "control without a name": "<View><Text name='t' value='$t'/><TextArea toName='t'/></View>",
    "not XML": "<View><Image name='i' value='$i'>",
}


def _ls_python() -> Path | None:
    from ls_agreement.demo.local_server import LocalLabelStudio

    server = LocalLabelStudio(Path(tempfile.gettempdir()), port=0)
    return server.venv_dir / "bin" / "python" if server.is_installed() else None


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    python = _ls_python()
    if python is None:
        pytest.skip("Label Studio's venv is not installed (the server fixtures install it): "
                    "its validator and templates cannot be read")
    proc = subprocess.run([str(python), "-c", _LS_SIDE], input=json.dumps(EXTRA), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _ours(xml: str) -> str | None:
    """None when parse_config accepts ``xml`` (module docstring), else its error."""
    try:
        parse_config(xml)
    except Unmeasured:
        return None
    except AdapterError as exc:
        return str(exc)
    return None


def test_every_shipped_template_is_accepted_by_both(verdicts):
    templates = {k: v for k, v in verdicts.items() if k.startswith("template:")}
    assert len(templates) >= 60, sorted(templates)
    refused_by_ls = {k: v["error"] for k, v in templates.items() if v["error"]}
    assert not refused_by_ls
    refused_by_us = {k: _ours(v["config"]) for k, v in templates.items() if _ours(v["config"])}
    assert not refused_by_us


def test_every_shipped_template_but_chat_only_has_a_measured_control(verdicts):
    unmeasured = []
    for key, v in verdicts.items():
        if key.startswith("template:"):
            try:
                parse_config(v["config"])
            except Unmeasured as exc:
                unmeasured.append((key, str(exc)))
    # a conversation written by each annotator (chat_eval) is the one template with nothing to compare
    assert [k for k, _ in unmeasured] == ["template:chat/chat_eval"], unmeasured
    assert "Chat 'chat' is not measured" in unmeasured[0][1]


@pytest.mark.parametrize("key", sorted(EXTRA))
def test_we_accept_what_label_studio_accepts(verdicts, key):
    ls_error = verdicts[key]["error"]
    ours = _ours(EXTRA[key])
    assert (ours is None) == (ls_error is None), f"Label Studio: {ls_error!r}; ours: {ours!r}"
