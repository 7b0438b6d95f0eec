"""Reading a Label Studio export file task by task, never the whole document in memory.

A JSON export of a large project is one list of tasks of up to gigabytes; ``json.load``
holds the text and every task at once (about 7 times the file). Here the file is decoded
in chunks and each task is parsed on its own by the standard library's C decoder
(``JSONDecoder.raw_decode`` at a position: the same parser and numbers as ``json.loads``),
so memory holds one chunk and one task. Measured on a 990 MB demo export this was as fast
as ``json.load`` and faster than ijson's C backend (``benchmarks/bench_memory.py``).

The accepted shapes and the error messages are those of :func:`.tasks.load_export`: a
top-level list of tasks, or an object whose ``tasks`` list is streamed the same way (any
other object is read whole: it is one task, or not an export); UTF-8/16/32 with or without
a byte-order mark; malformed JSON named by line and column of the file.
"""
from __future__ import annotations

import codecs
import json
import re
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from .errors import AdapterError

__all__ = ["iter_export", "CHUNK_CHARS"]

#: Characters decoded per read; a task longer than this grows the buffer until it fits.
CHUNK_CHARS = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
# A parse error this close to the end of the buffer may be a value cut by the chunk (a
# literal such as -Infinity is at most 9 characters, an escape 6); further back it is real.
_TAIL = 16
_DECODER = json.JSONDecoder()
_USE_JSON = "use Label Studio's JSON export (Export -> JSON) or a snapshot export"


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
            return obj

    def where(self, pos: int) -> tuple[int, int]:
        """1-based line and column of ``buf[pos]`` in the file."""
        n = self.buf.count("\n", 0, pos)
        if n == 0:
            return self.line, self.col + pos + 1
        return self.line + n, pos - self.buf.rfind("\n", 0, pos)

    def error(self, msg: str, pos: int) -> AdapterError:
        line, col = self.where(pos)
        hint = (" (one JSON document after another, as in JSON Lines: export with Label Studio's "
                "JSON export, one list of tasks)") if msg == "Extra data" else ""
        return AdapterError(f"{self.name} is not valid JSON: {msg} at line {line} column {col}{hint}")

    def _long_number(self) -> str | None:
        m = re.search(r"\d{4301,}", self.buf)
        if m is None:
            return None
        line, col = self.where(m.start())
        return f"a number of {m.end() - m.start():,} digits at line {line} column {col}"


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


def _check_first(task: Any, name: str) -> None:
    """A JSON_MIN export is a list of flat rows without ``annotations``/``data``."""
    if isinstance(task, dict) and "annotations" not in task and "data" not in task and (
            "annotator" in task or "annotation_id" in task):
        raise AdapterError(f"{name} looks like a JSON_MIN export (one flat row per annotation), "
                           f"which lacks annotation ids and results: {_USE_JSON}")


def _tasks_of_array(src: _Source) -> Iterator[Any]:
    first = True
    for task in _array(src):
        if first and isinstance(task, dict):
            _check_first(task, src.name)
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
        if key == "tasks" and src.buf[src.pos] == "[" and not streamed:
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
            raise AdapterError(f"{p.name} looks like a CSV/TSV export, which is not supported: {_USE_JSON}")
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
                from .tasks import parse_export   # the checks of a whole object (one task, or not an export)
                yield from parse_export(top, source=p.name)
                return
        elif c == "":
            raise src.error("Expecting value", src.pos)
        else:
            top_value = src.value()
            _end(src)
            from .tasks import parse_export
            yield from parse_export(top_value, source=p.name)
            return
        _end(src)


def _end(src: _Source) -> None:
    """Only blanks may follow the top-level value."""
    if src.skip_ws() != "":
        raise src.error("Extra data", src.pos)
