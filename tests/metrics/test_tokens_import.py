"""Tokenizing loads nltk without scikit-learn (start-up of every report) and tokenizes as nltk does."""
from __future__ import annotations

import subprocess
import sys


def test_nltk_loaded_without_scikit_learn() -> None:
    code = (
        "import sys\n"
        "from ls_agreement.metrics.tokens import token_bounds\n"
        "s, e = token_bounds(\"Alice works at Acme Corp. in Paris, doesn't she?\", 'nltk')\n"
        "assert 'sklearn' not in sys.modules, 'scikit-learn was imported'\n"
        "from nltk.tokenize import NLTKWordTokenizer\n"
        "ref = list(NLTKWordTokenizer().span_tokenize(\"Alice works at Acme Corp. in Paris, doesn't she?\"))\n"
        "assert list(zip(s.tolist(), e.tolist())) == ref\n"
        "import sklearn  # still importable afterwards\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
