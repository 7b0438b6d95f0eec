"""Chat messages (Label Studio Enterprise's ``<Chat>``) as the regions per-message answers
point at.

A Chat shows a conversation and, when editable or given an ``llm``, lets the annotator
extend it. Each message is a ``chatmessage`` result of the annotation (label-studio-sdk
``ChatMessageTag``: ``from_name == to_name ==`` the Chat's name; ``ChatMessageValue``:
``{"chatmessage": {"role", "content"}}``), whether it was read from the task data or written
by the annotator. The messages are the conversation, not an answer to compare across
annotators, so the Chat is never measured (``config.py`` says so once). What is measured
are the controls on it: per conversation (a Rating, a TextArea), or per message
(``perRegion="true"``): such an answer carries the id of its message, as any per-region
answer carries its region's (``region_links``), and the message's own ``chatmessage``
beside its answer (Label Studio copies a region's ``serialize()`` into each of its results).

:class:`Conversation` reads one annotation's messages and maps each id to a
:class:`~ls_agreement.metrics.model.Message`, so that the answer compares the message it
was given to: two annotators' answers meet when their messages have equal role and content
(``region_match``; docs/formulas.md, "Chat messages"). An answer whose id names no
``chatmessage`` result of its annotation resolves to the message it carries itself.

:class:`TaskMessages` gathers a task's messages over its annotations: the conversation is
what the task offers its per-message controls (chance compares answers by the position of
their message, as it compares options a task offers), and the messages found in one
annotator's conversation only (each annotator wrote their own, or an LLM answered each
differently) are counted: answers to those can meet no other annotator's, and the report
says how many there are.
"""
from __future__ import annotations

from typing import Any, Iterable

from ls_agreement.metrics.model import Message, message_text

from .errors import BadValue, show

__all__ = ["TYPES", "parse_message", "numbered", "data_messages", "Conversation", "TaskMessages"]

TYPES = frozenset({"chatmessage"})
_EXAMPLES = 3


def parse_message(value: Any) -> tuple[str, str]:
    """``(role, content)`` of a ``chatmessage`` result's ``value``.

    Raises
    ------
    BadValue
        No ``chatmessage`` object, or a role or content that is not a string.
    """
    msg = value.get("chatmessage") if isinstance(value, dict) else None
    if type(msg) is not dict:
        raise BadValue("value.chatmessage", f"missing or not an object (got {show(msg)})")
    role, content = msg.get("role"), msg.get("content")
    if type(role) is not str or not role.strip():
        raise BadValue("value.chatmessage.role", f"missing or not a non-empty string (got {show(role)})")
    if type(content) is not str:
        raise BadValue("value.chatmessage.content", f"missing or not a string (got {show(content)})")
    return role, content


def _region_id(res: dict) -> Any:
    rid = res.get("id")
    return rid if type(rid) in (str, int) and rid != "" else None


def numbered(messages: Iterable[tuple[str, str, str]]) -> list[tuple[str, Message]]:
    """``(chat, role, content)`` in conversation order -> ``(chat, Message)``, each with its
    ``nth``: the earlier messages of the same Chat with the same role and content."""
    counts: dict[tuple, int] = {}
    out = []
    for chat, role, content in messages:
        key = (chat, *message_text(role, content))
        nth = counts.get(key, 0)
        counts[key] = nth + 1
        out.append((chat, Message(role, content, nth)))
    return out


def data_messages(chat: str, data: Any, key: str | None) -> list[tuple[str, str, str]]:
    """The messages the task data gives the Chat (``data[key]``, a list of ``{role,
    content}``), as ``(chat, role, content)``; entries of another shape are left out (the
    annotations' own results are what is read and checked)."""
    raw = data.get(key) if type(data) is dict and key is not None else None
    if type(raw) is not list:
        return []
    return [(chat, m["role"], m["content"]) for m in raw
            if type(m) is dict and type(m.get("role")) is str and type(m.get("content")) is str]


class Conversation:
    """The messages of one annotation, by Chat, in result order."""

    __slots__ = ("_read", "_carried")

    def __init__(self) -> None:
        self._read: list[tuple[Any, str, str, str]] = []      # (id, chat, role, content)
        self._carried: dict[Any, tuple[str, str, str]] = {}   # id -> (chat, role, content)

    def read(self, chat: str, res: dict) -> None:
        """A ``chatmessage`` result of the Chat named ``chat``.

        Raises
        ------
        BadValue
            Its value is not a message (field relative to the result).
        """
        rtype = res.get("type")
        if rtype is not None and rtype not in TYPES:
            raise BadValue("type", f"result type {show(rtype)} on Chat {chat!r}, whose results are "
                                   "'chatmessage'")
        role, content = parse_message(res.get("value"))
        rid = _region_id(res)
        if rid is not None:    # a message without an id: no answer can name it
            self._read.append((rid, chat, role, content))

    def carried(self, chat: str, res: dict) -> None:
        """A per-message answer's own copy of its message, kept in case no ``chatmessage``
        result of the annotation has its id (an unreadable copy is not kept: the answer's id
        is then reported as naming no region)."""
        rid = _region_id(res)
        if rid is None or rid in self._carried:
            return
        try:
            self._carried[rid] = (chat, *parse_message(res.get("value")))
        except BadValue:
            pass

    def link(self, region_ids: dict) -> list[tuple[str, Message]]:
        """Add every message to the annotation's id map (``region_links.Linked.regions``:
        an entry already built) and return them, with their Chat, in conversation order.

        ``nth`` counts the earlier messages of the same Chat with the same role and content,
        in result order: the conversation's order, in which Label Studio writes them. A
        region control's id is never replaced.
        """
        read_ids = {m[0] for m in self._read}
        rows = self._read + [(rid, *m) for rid, m in self._carried.items() if rid not in read_ids]
        out = numbered(row[1:] for row in rows)
        for (rid, *_), (chat, msg) in zip(rows, out):
            region_ids.setdefault(rid, (chat, None, None, (msg,)))
        return out


class TaskMessages:
    """The messages of one task's annotations, by Chat, gathered annotation by annotation.

    :meth:`end_task` gives what the task offers its per-message controls: every message of
    its conversation(s), the task data's first; chance compares answers by the position of
    their message there (docs/formulas.md §1, "Answers offered per item"). It also counts
    the messages found in one annotator's conversation only, for :meth:`note`.

    Parameters
    ----------
    keys : dict
        Chat name -> the ``task.data`` key of its messages (None: a literal value).
    """

    def __init__(self, keys: dict[str, str | None]) -> None:
        self._keys = keys                                  # chat -> the task.data key it reads
        self._seen: dict[str, dict[Message, set]] = {}   # chat -> message -> its annotators
        self._annotators: set = set()
        self.alone = 0
        self.total = 0
        self._examples: list[str] = []

    def add(self, annotator: Any, messages: list[tuple[str, Message]]) -> None:
        """One annotation's messages (:meth:`Conversation.link`)."""
        if messages:
            self._annotators.add(annotator)
        for chat, msg in messages:
            self._seen.setdefault(chat, {}).setdefault(msg, set()).add(annotator)

    def end_task(self, task: Any, data: Any) -> dict[str, tuple[Message, ...]]:
        """Chat name -> the task's messages: those of its data first, in their order, then
        those only annotations hold, in order of first appearance. The counts are updated
        and the task forgotten."""
        out: dict[str, tuple[Message, ...]] = {}
        for chat, key in self._keys.items():
            given = dict.fromkeys(m for _, m in numbered(data_messages(chat, data, key)))
            given.update(dict.fromkeys(self._seen.get(chat, ())))
            if given:
                out[chat] = tuple(given)
        if len(self._annotators) > 1:
            for by_msg in self._seen.values():
                lone = [m for m, who in by_msg.items() if len(who) == 1]
                self.total += len(by_msg)
                self.alone += len(lone)
                if lone and len(self._examples) < _EXAMPLES:
                    self._examples.append(f"task {show(task)}: {lone[0].role} {show(lone[0].content, 50)}")
        self._seen, self._annotators = {}, set()
        return out

    def join(self, later: "TaskMessages") -> None:
        """Add the counts of the tasks ``later`` read after this one's (an export read in
        parts, ``adapt.adapt_parts``): the note is then the one reading of both gives."""
        self.alone += later.alone
        self.total += later.total
        self._examples = (self._examples + later._examples)[:_EXAMPLES]

    def note(self) -> str | None:
        """A warning when some messages appear in one annotator's conversation only, else None."""
        if not self.alone:
            return None
        return (f"{self.alone} of {self.total} chat messages appear in one annotator's conversation only "
                f"(e.g. {'; '.join(self._examples)}): messages the annotators wrote themselves, or LLM "
                "replies that differ, are different messages, so an answer given to one of them "
                "meets no other annotator's answer and counts as a disagreement")
