"""``ls-agreement demo``: a local Label Studio with a sample multi-annotator project.

Everything the demo needs and the service does not: the sample project's generator
(:mod:`.data`), a Label Studio installed into its own cached virtualenv and started on the
loopback interface with its users and tokens (:mod:`.local_server`; what it needs from
the host in :mod:`.host`) and the command itself (:mod:`.command`). The
runtime (``ls_agreement.plugin``: report, sync, connect, serve, worker) imports nothing
from here (tests/test_packaging.py checks it); the tests and benchmarks reuse the local
Label Studio, and keep their own PostgreSQL and Redis launchers (``tests/``).
"""
