"""The one error hierarchy and exit-code table of the command line.

Every error the plugin raises on purpose derives from :class:`AgreementError` and carries
the exit code a script sees. :class:`BadInput` is defined by the metrics (a bad argument of
a measure) and the adapters' :class:`~ls_agreement.adapters.errors.AdapterError` derives
from it, so one ``except BadInput`` covers a measure's argument, an export, a labeling
config, a settings file and a command-line value alike.

``cli.main`` is the one place that turns an exception into an exit code and a message
(:func:`exit_code`, :func:`describe`): the commands raise, they never pick a code.

==== ===========================================================================
code meaning
==== ===========================================================================
0    ok
1    internal error: anything not raised on purpose (a bug: the traceback with
     ``--debug``), or an installation problem
2    bad input or usage; the message names the task, annotation and field, the
     settings key, or the option
3    Label Studio (or the Redis of ``--queue``) unreachable or refused: bad URL,
     token, project, server errors
==== ===========================================================================
"""
from __future__ import annotations

from ls_agreement.adapters.errors import AdapterError, AgreementError, BadInput

__all__ = [
    "EXIT_OK", "EXIT_INTERNAL", "EXIT_BAD_INPUT", "EXIT_SERVER", "AgreementError", "BadInput",
    "AdapterError", "LabelStudioError", "ServerUnavailable", "AuthError", "NotFound",
    "RequestRejected", "LocalServerError", "IncompatibleSDK", "QueueUnavailable", "exit_code",
    "describe",
]

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_SERVER = 0, 1, 2, 3


class LabelStudioError(AgreementError):
    """A problem talking to Label Studio."""

    exit_code = EXIT_SERVER


class ServerUnavailable(LabelStudioError):
    """Unreachable, timing out or answering 5xx after all retries."""


class AuthError(LabelStudioError):
    """The token was refused (401/403) or is an expired personal access token."""


class NotFound(LabelStudioError):
    """The project (or task) does not exist or is not visible to this token."""


class RequestRejected(LabelStudioError):
    """Any other 4xx: the server understood and refused the request."""


class LocalServerError(LabelStudioError):
    """The local Label Studio of ``demo`` and the tests could not be installed or started."""


class IncompatibleSDK(AgreementError):
    """The installed label-studio-sdk lacks what the plugin calls (older than the declared
    floor): an installation problem, never the token's or the server's fault."""

    exit_code = EXIT_INTERNAL


class QueueUnavailable(AgreementError, ConnectionError):
    """The Redis of ``--queue`` does not answer (the URL is given without its password)."""

    exit_code = EXIT_SERVER


def exit_code(exc: BaseException) -> int:
    """The exit code of an exception: its own for ours, 1 for anything else (a bug)."""
    return int(getattr(exc, "exit_code", EXIT_INTERNAL)) if isinstance(exc, AgreementError) else EXIT_INTERNAL


def describe(exc: BaseException) -> str:
    """The one-line message the command line prints for ``exc``: ``error: …`` for ours,
    ``internal error: <type>: …`` for anything else."""
    if isinstance(exc, AgreementError):
        return f"error: {exc}"
    return f"internal error: {type(exc).__name__}: {exc}"
