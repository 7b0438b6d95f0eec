"""nltk is imported only by a measure that tokenizes (its package init loads all of nltk),
with no change to the process's modules, and tokenizes as nltk does."""
from __future__ import annotations

import subprocess
import sys


def test_nltk_loaded_only_to_tokenize_and_nothing_hidden() -> None:
    code = (
        "import sys\n"
        "import ls_agreement.metrics, ls_agreement.adapters.adapt\n"
        "from ls_agreement.plugin.report.build import build_report\n"
        "from ls_agreement.plugin.settings import ReportSettings\n"
        "cfg = '<View><Text name=\"t\" value=\"$t\"/><Choices name=\"c\" toName=\"t\">"
        "<Choice value=\"a\"/><Choice value=\"b\"/></Choices></View>'\n"
        "tasks = [{'id': i, 'data': {'t': 'x'}, 'annotations': [{'id': 10 * i + k, 'completed_by': k,"
        " 'result': [{'from_name': 'c', 'to_name': 't', 'type': 'choices',"
        " 'value': {'choices': ['ab'[(i + k) % 2]]}}]} for k in (1, 2)]} for i in range(1, 9)]\n"
        "build_report(cfg, tasks, ReportSettings(bootstrap=0))\n"
        "assert 'nltk' not in sys.modules, 'nltk loaded without spans'\n"
        "from ls_agreement.metrics.tokens import token_bounds\n"
        "s, e = token_bounds(\"Alice works at Acme Corp. in Paris, doesn't she?\", 'nltk')\n"
        "assert 'nltk' in sys.modules\n"
        "assert not [k for k, v in sys.modules.items() if v is None], 'a module hidden'\n"
        "from nltk.tokenize import NLTKWordTokenizer\n"
        "ref = list(NLTKWordTokenizer().span_tokenize(\"Alice works at Acme Corp. in Paris, doesn't she?\"))\n"
        "assert list(zip(s.tolist(), e.tolist())) == ref\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
