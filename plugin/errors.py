"""The one error hierarchy and exit-code table of the command line.

Every error the plugin raises on purpose derives from :class:`AgreementError` and carries
the exit code a script sees. Bad input of the adapters (:class:`~ls_agreement.adapters.
errors.AdapterError`) is a :class:`BadInput` too, so one ``except BadInput`` covers an
export, a labeling config, a settings file and a command-line value alike.

==== ===========================================================================
code meaning
==== ===========================================================================
0    ok
1    internal error (a bug: please report it with ``--debug``'s traceback)
2    bad input or usage; the message names the task, annotation and field, the
     settings key, or the option
3    Label Studio unreachable or refused (bad URL, token, project, server errors)
==== ===========================================================================
"""
from __future__ import annotations

from ls_agreement.adapters.errors import AdapterError, AgreementError, BadInput

__all__ = [
    "EXIT_OK", "EXIT_INTERNAL", "EXIT_BAD_INPUT", "EXIT_SERVER", "AgreementError", "BadInput",
    "AdapterError", "LabelStudioError", "ServerUnavailable", "AuthError", "NotFound",
    "RequestRejected", "LocalServerError", "IncompatibleSDK", "exit_code",
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


def exit_code(exc: BaseException) -> int:
    """The exit code of an exception: its own for ours, 1 for anything else (a bug)."""
    return int(getattr(exc, "exit_code", EXIT_INTERNAL)) if isinstance(exc, AgreementError) else EXIT_INTERNAL
