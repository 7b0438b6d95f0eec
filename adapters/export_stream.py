"""Reading a Label Studio export file task by task, never the whole document in memory.

A JSON export of a large project is one list of tasks of up to gigabytes; ``json.load``
holds the text and every task at once (about 7 times the file). Here the file is decoded
in chunks and each task is parsed on its own by the standard library's C decoder
(``JSONDecoder.raw_decode`` at a position: the same parser and numbers as ``json.loads``),
so memory holds one chunk and one task. Measured on a 990 MB demo export this was as fast
as ``json.load`` and faster than ijson's C backend (``benchmarks/bench_memory.py``).

The accepted shapes and the error messages are those of :mod:`.export_shape`: a
top-level list of tasks, or an object whose ``tasks`` list is streamed the same way (any
other object is read whole: it is one task, or not an export); UTF-8/16/32 with or without
a byte-order mark; malformed JSON named by line and column of the file.
"""
from __future__ import annotations

import codecs
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from .errors import AdapterError, PartsDiffer
from .export_shape import USE_JSON, parse_export, refuse_json_min

__all__ = ["iter_export", "load_export", "CHUNK_CHARS", "ExportFile", "ExportPart", "split_export", "iter_part",
           "may_hold_lone_surrogates", "without_lone_surrogates"]

#: Characters decoded per read; a task longer than this grows the buffer until it fits.
CHUNK_CHARS = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
# A parse error this close to the end of the buffer may be a value cut by the chunk (a
# literal such as -Infinity is at most 9 characters, an escape 6); further back it is real.
_TAIL = 16
_DECODER = json.JSONDecoder()
# a \u escape of a surrogate in the raw text, and a surrogate left alone in a decoded string
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")


class _Source:
    """Decoded text of a file, read in chunks, with the position of the buffer in the file.

    ``buf[pos:]`` is unread; ``line``/``col`` are the 1-based line and the column offset of
    ``buf[0]`` in the file, for error messages.
    """

    def __init__(self, fh: BinaryIO, name: str) -> None:
        self.fh, self.name = fh, name
        head = fh.read(4)
        self.encoding = json.detect_encoding(head)
        self.decoder = codecs.getincrementaldecoder(self.encoding)("strict")
        self.bytes_read = 0
        self.buf, self.pos, self.eof = "", 0, False
        self.line, self.col = 1, 0
        self._feed(head, first=True)

    def _feed(self, raw: bytes, first: bool = False) -> None:
        pending = len(self.decoder.getstate()[0])
        final = not raw and not first
        try:
            text = self.decoder.decode(raw, final=final)
        except UnicodeDecodeError as exc:
            label = "UTF-8" if self.encoding == "utf-8" else self.encoding.upper()
            at = self.bytes_read - pending + exc.start
            raise AdapterError(f"{self.name} is not {label} text: {exc.reason} at byte {at} "
                               f"(re-save the export as UTF-8)") from None
        self.bytes_read += len(raw)
        if first and text[:1] == "\ufeff":
            text = text[1:]
        self.buf += text
        if final:
            self.eof = True

    def more(self, at_least: int | None = None) -> bool:
        """Read on (dropping what was consumed); False at the end of the file."""
        at_least = at_least or CHUNK_CHARS
        if self.eof:
            return False
        if self.pos:
            n = self.buf.count("\n", 0, self.pos)
            self.col = (self.col + self.pos) if n == 0 else self.pos - self.buf.rfind("\n", 0, self.pos) - 1
            self.line += n
            self.buf, self.pos = self.buf[self.pos:], 0
        start = len(self.buf)
        while len(self.buf) - start < at_least and not self.eof:
            self._feed(self.fh.read(at_least))
        return True

    def skip_ws(self) -> str:
        """The next non-blank character ('' at the end of the file), reading on as needed."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def value(self) -> Any:
        """Parse the JSON value at ``pos`` (reading on while it is cut by the buffer's end)."""
        want = CHUNK_CHARS
        start = self.pos
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.msg.startswith("Unterminated string") or exc.pos >= len(self.buf) - _TAIL
                if cut and self.more(want):
                    want *= 2   # a value longer than a chunk: grow geometrically, never quadratic
                    continue
                raise self.error(exc.msg, exc.pos) from None
            except RecursionError:
                raise AdapterError(f"{self.name} is not valid JSON: nested too deeply") from None
            except ValueError as exc:  # an integer of more than 4,300 digits (int_max_str_digits)
                raise AdapterError(f"{self.name} is not valid JSON: {self._long_number() or exc}") from None
            if end >= len(self.buf) - _TAIL and not self.eof:
                # a number at the very end may go on in the next chunk ("12" of "1234"):
                # read on and parse it again
                if self.more(want):
                    continue
            self.pos = end
            if _SURROGATE_ESCAPE.search(self.buf, start, end):   # rare: look closer only then
                obj = without_lone_surrogates(obj, self.name)
            return obj

    def where(self, pos: int) -> tuple[int, int]:
        """1-based line and column of ``buf[pos]`` in the file."""
        n = self.buf.count("\n", 0, pos)
        if n == 0:
            return self.line, self.col + pos + 1
        return self.line + n, pos - self.buf.rfind("\n", 0, pos)

    def error(self, msg: str, pos: int) -> AdapterError:
        line, col = self.where(pos)
        msg = msg.removesuffix(" at")   # json's "Unterminated string starting at", "... character at"
        hint = (" (one JSON document after another, as in JSON Lines: export with Label Studio's "
                "JSON export, one list of tasks)") if msg == "Extra data" else ""
        return AdapterError(f"{self.name} is not valid JSON: {msg} at line {line} column {col}{hint}")

    def _long_number(self) -> str | None:
        m = re.search(r"\d{4301,}", self.buf)
        if m is None:
            return None
        line, col = self.where(m.start())
        return f"a number of {m.end() - m.start():,} digits at line {line} column {col}"


def may_hold_lone_surrogates(raw: str | bytes) -> bool:
    """Whether JSON text ``raw`` escapes a surrogate (``\\ud83d``): only then can its parsed
    value hold a lone one (:func:`without_lone_surrogates`); a fast scan of the text."""
    return (_SURROGATE_ESCAPE_BYTES if isinstance(raw, bytes) else _SURROGATE_ESCAPE).search(raw) is not None


def without_lone_surrogates(value: Any, source: str) -> Any:
    """``value`` (a task parsed from JSON) with each lone surrogate (an escape such as
    ``\\udc00`` that is half of no pair: valid JSON, but no character, and no UTF-8 writer
    takes it) read as U+FFFD, with a warning naming ``source``, the task and where in it;
    pairs were joined by the decoder already. Export files are read so; the service reads
    webhook payloads and the exports it asks Label Studio for the same way."""
    where: list[str] = []

    def fix(v: Any, path: str) -> Any:
        if type(v) is str:
            if _LONE.search(v) is None:
                return v
            where.append(path or "the value")
            return _LONE.sub("\ufffd", v)
        if type(v) is list:
            return [fix(x, f"{path}[{i}]") for i, x in enumerate(v)]
        if type(v) is dict:
            return {fix(k, f"{path} (a key)"): fix(x, f"{path}.{k}" if path else str(k)) for k, x in v.items()}
        return v

    out = fix(value, "")
    if where:
        task = value.get("id") if isinstance(value, dict) else None
        shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        warnings.warn(f"{source}: task {task!r}: {shown} held a lone surrogate escape (half of an "
                      f"emoji or other character, not text by itself), read as U+FFFD", stacklevel=2)
    return out


def _array(src: _Source) -> Iterator[Any]:
    """The elements of the JSON array whose '[' is at ``src.pos``, one at a time."""
    src.pos += 1
    if src.skip_ws() == "]":
        src.pos += 1
        return
    while True:
        if src.skip_ws() == "":
            raise src.error("Expecting value", src.pos)
        yield src.value()
        c = src.skip_ws()
        if c == ",":
            src.pos += 1
            continue
        if c == "]":
            src.pos += 1
            return
        raise src.error("Expecting ',' delimiter", src.pos)


def _tasks_of_array(src: _Source) -> Iterator[Any]:
    first = True
    for task in _array(src):
        if first and isinstance(task, dict):
            refuse_json_min(task, src.name)
            first = False
        yield task


def _object(src: _Source, top: dict) -> Iterator[Any]:
    """A top-level object: its ``tasks`` list is streamed; other keys are read whole into ``top``."""
    src.pos += 1
    streamed = False
    c = src.skip_ws()
    if c == "}":
        src.pos += 1
        return
    while True:
        if c != '"':
            raise src.error("Expecting property name enclosed in double quotes", src.pos)
        key = src.value()
        if src.skip_ws() != ":":
            raise src.error("Expecting ':' delimiter", src.pos)
        src.pos += 1
        if src.skip_ws() == "":
            raise src.error("Expecting value", src.pos)
        if key == "tasks" and streamed:
            # json.load would keep the last, but the first is read already
            raise AdapterError(f"{src.name}: the top-level object holds \"tasks\" twice; {USE_JSON}")
        if key == "tasks" and src.buf[src.pos] == "[":
            streamed = True
            top[key] = []          # marker: the list was streamed
            yield from _tasks_of_array(src)
        else:
            top[key] = src.value()
        c = src.skip_ws()
        if c == ",":
            src.pos += 1
            c = src.skip_ws()
            continue
        if c == "}":
            src.pos += 1
            return
        raise src.error("Expecting ',' delimiter", src.pos)


def iter_export(path: str | Path) -> Iterator[Any]:
    """Yield the tasks of an export file one at a time (see the module docstring).

    Raises
    ------
    AdapterError
        Unreadable file, text that is not UTF-8/16/32, malformed JSON (with line and
        column), a CSV / JSON_MIN export, or a top level that is not a list of tasks. A
        syntax error late in the file is raised when the reader gets there, after the
        tasks before it were yielded.
    """
    p = Path(path)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise AdapterError(f"cannot read export {str(p)!r}: {exc.strerror or exc}") from None
    with fh:
        try:
            src = _Source(fh, p.name)
            src.more()
        except OSError as exc:
            raise AdapterError(f"cannot read export {str(p)!r}: {exc.strerror or exc}") from None
        # sniffed on the decoded text: a byte-order mark or UTF-16 is not a CSV
        head = src.buf[:4096].lstrip()
        first_line = head.split("\n", 1)[0]
        csv_like = head[:1] not in ("[", "{", "") and ("," in first_line or "\t" in first_line)
        if p.suffix.lower() in (".csv", ".tsv") or csv_like:
            raise AdapterError(f"{p.name} looks like a CSV/TSV export, which is not supported: {USE_JSON}")
        c = src.skip_ws()
        if c == "[":
            yield from _tasks_of_array(src)
        elif c == "{":
            top: dict = {}
            streamed = False
            for task in _object(src, top):
                streamed = True
                yield task
            if not streamed and not ("tasks" in top and top["tasks"] == []):
                _ = _end(src)
                yield from parse_export(top, source=p.name)   # one task, or not an export
                return
        elif c == "":
            raise src.error("Expecting value", src.pos)
        else:
            top_value = src.value()
            _end(src)
            yield from parse_export(top_value, source=p.name)
            return
        _end(src)


def load_export(path: str | Path) -> list[dict]:
    """Read an export file and return its list of task dicts.

    For a large export, iterate :func:`iter_export` instead: it yields one task at a time
    and never holds the whole document (the ``report`` command does).

    Parameters
    ----------
    path : str or Path
        A JSON export / snapshot export file.

    Raises
    ------
    AdapterError
        As :func:`iter_export`.
    """
    return list(iter_export(path))


def _end(src: _Source) -> None:
    """Only blanks may follow the top-level value."""
    if src.skip_ws() != "":
        raise src.error("Extra data", src.pos)


# ---------------------------------------------------------------------------------------
# an export read in parts side by side (issue 24: reading scales with the cores)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExportPart:
    """A byte range of an export's top-level list holding whole tasks: from ``start`` (a
    task's ``{``) to ``end`` (past the comma and blanks after its last task; the file's end
    for the ``last`` part, whose tasks end with the list's ``]``)."""

    path: Path
    start: int
    end: int
    first: bool
    last: bool


#: Bytes searched past each cut for the next task's start; a cut with no task start in
#: them is left out (the parts around it join).
_SEARCH = 32 << 20
#: Bytes one candidate task is decoded from, at most (a longer task is passed over).
_CANDIDATE = 8 << 20
_TASK_START = re.compile(rb",[ \t\n\r]*\{")
#: Besides ``data``, a task has one of these (an object of a task's data seldom does).
_TASK_KEYS = frozenset({"id", "annotations", "predictions"})


def split_export(path: str | Path, parts: int) -> list[ExportPart] | None:
    """Cut a UTF-8 export (one top-level list of tasks) into at most ``parts`` byte ranges
    of about equal size, each starting at a task; None where it cannot be cut (another
    encoding or shape, one part, or too small to be worth it).

    A cut is placed at the first ``, {`` past each equal share whose object decodes as a
    task (an object with ``data`` and an ``id``, ``annotations`` or ``predictions``)
    followed by ``,`` or ``]``. That is a guess: a nested
    object can look the same. :func:`iter_part` checks it — a part whose range does not
    hold whole tasks separated by commas raises :class:`PartsDiffer` — and since the first
    part starts where the list does, a part that reads clean ends exactly where the next
    one starts: every part read clean is the whole export read in order.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        fh = p.open("rb")
    except OSError:
        return None
    if parts < 2 or size < parts * CHUNK_CHARS:
        fh.close()
        return None
    with fh:
        head = fh.read(4096)
        if json.detect_encoding(head) != "utf-8":
            return None
        at = 3 if head.startswith(codecs.BOM_UTF8) else 0
        while at < len(head) and head[at:at + 1] in b" \t\n\r":
            at += 1
        if head[at:at + 1] != b"[":
            return None
        at += 1
        while at < len(head) and head[at:at + 1] in b" \t\n\r":
            at += 1
        if head[at:at + 1] != b"{":
            return None
        starts = [at]
        for k in range(1, parts):
            cut = _next_task(fh, max(size * k // parts, starts[-1] + 1), size)
            if cut is not None and cut > starts[-1]:
                starts.append(cut)
    if len(starts) < 2:
        return None
    ends = starts[1:] + [size]
    return [ExportPart(p, a, b, a == starts[0], b == size) for a, b in zip(starts, ends)]


def _next_task(fh: BinaryIO, at: int, size: int) -> int | None:
    """The byte offset of the first task start past ``at`` (see :func:`split_export`),
    searched a mebibyte at a time up to :data:`_SEARCH` bytes."""
    step = 1 << 20
    for base in range(at, min(at + _SEARCH, size), step):
        fh.seek(base)
        window = fh.read(step + 64)          # a match across the window's end is seen once
        for m in _TASK_START.finditer(window):
            if m.start() >= step:
                break
            start = base + m.end() - 1
            if _is_task_at(fh, start):
                return start
    return None


def _is_task_at(fh: BinaryIO, start: int) -> bool:
    """Whether the object at byte ``start`` decodes as a task followed by ``,`` or ``]``
    (read 64 KiB first, more while the object runs past what was read)."""
    n = 1 << 16
    while True:
        fh.seek(start)
        raw = fh.read(n)
        try:
            text = raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:       # the read's end cut a character
            text = raw[:exc.start].decode("utf-8", errors="replace")
        try:
            obj, end = _DECODER.raw_decode(text)
        except (json.JSONDecodeError, RecursionError, ValueError):
            if len(raw) < n or n >= _CANDIDATE:
                return False
            n *= 8
            continue
        after = _WS.match(text, end).end()
        if after >= len(text) and len(raw) == n and n < _CANDIDATE:
            n *= 8
            continue
        return (isinstance(obj, dict) and "data" in obj and not _TASK_KEYS.isdisjoint(obj)
                and after < len(text) and text[after] in ",]")


class ExportFile:
    """An export file as the iterable of its tasks (:func:`iter_export`, read afresh on
    each iteration) that a reader may also cut into parts (:func:`split_export`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __iter__(self) -> Iterator[Any]:
        return iter_export(self.path)


class _Range:
    """A file's bytes from ``start`` to ``end``, read as a file (what :class:`_Source` reads)."""

    def __init__(self, fh: BinaryIO, start: int, end: int) -> None:
        self.fh, self.left = fh, end - start
        fh.seek(start)

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.fh.read(n)
        self.left -= len(data)
        return data


def iter_part(part: ExportPart) -> Iterator[Any]:
    """The tasks of one part, in order.

    Raises
    ------
    PartsDiffer
        The range does not hold whole tasks separated by commas (the cut was no task's
        start), or anything in it is not valid JSON: the caller reads the whole export,
        which reports the problem with its line and column.
    """
    try:
        fh = part.path.open("rb")
    except OSError as exc:
        raise PartsDiffer(f"cannot open {part.path}: {exc}") from None
    with fh:
        try:
            src = _Source(_Range(fh, part.start, part.end), part.path.name)   # type: ignore[arg-type]
            src.more()
            first = part.first
            while True:
                c = src.skip_ws()
                if c == "":
                    if part.last:
                        raise PartsDiffer("the last part ends before the list does")
                    return
                task = src.value()
                if first:     # a JSON_MIN export shows in the list's first task (_tasks_of_array)
                    refuse_json_min(task, src.name)
                    first = False
                yield task
                c = src.skip_ws()
                if c == ",":
                    src.pos += 1
                    continue
                if c == "]" and part.last:
                    src.pos += 1
                    if src.skip_ws() != "":
                        raise PartsDiffer("more after the list")
                    return
                raise PartsDiffer("a part's tasks are not separated by commas")
        except (AdapterError, OSError) as exc:
            raise PartsDiffer(str(exc)) from None
