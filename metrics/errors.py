"""The errors every layer shares: the metrics define them, since they depend on nothing.

:class:`BadInput` is what a caller did wrong — a bad argument, a table that cannot be
measured, a value no distance compares — and is also a ``ValueError``, as numpy, pandas
and scikit-learn raise for bad arguments. The adapters (``AdapterError``, naming task,
annotation and field) and the plugin (settings, options, server errors) derive from these
two; the command line maps each class to its exit code in one table
(``ls_agreement.plugin.errors.exit_code``): a ``BadInput`` is exit 2, anything that is not
an :class:`AgreementError` is a bug (exit 1).
"""
from __future__ import annotations

__all__ = ["AgreementError", "BadInput"]


class AgreementError(Exception):
    """Every error raised on purpose; ``exit_code`` is what the command line returns."""

    exit_code = 1


class BadInput(AgreementError, ValueError):
    """Bad input (an argument, a table, an export, a labeling config, settings, a
    command-line value): exit code 2."""

    exit_code = 2
