"""Label Studio's mask encodings -> pixel runs: brush RLE and PNG data URLs.

**Brush RLE** (``BrushLabels``, ``Brush``, ``MagicWand`` results, ``value.rle``): the
RGBA pixels of the whole image (``4 · width · height`` bytes, every channel set to the
pixel's alpha) packed by thi.ng's ``rle-pack``, which label-studio-sdk decodes in
``label_studio_sdk.converter.brush.decode_rle``. The stream, read most significant bit
first: 32 bits ``num`` (values), 5 bits ``word size − 1``, four 4-bit ``run-size − 1``;
then records until ``num`` values are out: 1 bit ``repeat``, 2 bits choosing a run size
``r``, ``r`` bits ``count − 1``, then one word repeated ``count`` times (repeat) or
``count`` words (literal). A pixel is in the mask when its alpha is not 0, as Label
Studio draws it (``RLE2Region`` colours every pixel with a nonzero alpha).

The SDK reads the stream bit by bit in Python. Here every bit position is parsed at once
as if a record started there (numpy); the true record starts are the chain of those "next
record" pointers from the header, found by pointer doubling to strides of 16 records, a
short walk over the strides and one gather per record within them; and the runs come
straight from the records: the 4-million-byte pixel buffer of a 1024 × 1024 mask is never
built. ``tests/adapters/test_masks_shapes.py`` checks both decoders here against the
SDK's on random masks; ``benchmarks/bench_masks.py`` times them.

**Bitmask** (``BitmaskLabels``, ``Bitmask``, ``value.imageDataURL``): a PNG data URL of
the image's size, black pixels on a transparent background; a pixel is in the mask when
its alpha is not 0. Decoded with Pillow.
"""
from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import numpy as np

from ls_agreement.metrics.mask_runs import canonical_runs, pack_runs, ragged_arange, runs_from_array

__all__ = ["RleError", "decode_rle_values", "decode_rle_mask", "decode_png_mask"]

_HEADER_BITS = 32 + 5 + 4 * 4
# bit offsets within a byte, as right shifts of the 32 bits from that byte to its 19 first
_BIT_SHIFTS = (13 - np.arange(8)).astype(np.uint32)
# streams longer than this are refused (bit positions are int32: 2**30 bits at most)
MAX_RLE_BYTES = 2 ** 27
# record chains are walked in strides of 2**_STRIDE_BITS records
_STRIDE_BITS = 4
# A data URL of more than this many characters is refused before decoding (a 16k x 16k
# mask compresses to far less).
MAX_DATA_URL = 200_000_000


class RleError(ValueError):
    """The bytes are not a well-formed brush RLE stream (the message says where)."""


class _Records:
    """The parsed records of one RLE stream.

    Attributes
    ----------
    num, word : int — values in the stream, bits per value
    start : ndarray of int64, shape (n_records,) — bit position of each record
    repeat : ndarray of bool, shape (n_records,)
    out0, out1 : ndarray of int64, shape (n_records,) — the values [out0, out1) it writes
    head : ndarray of int64, shape (n_records,) — bits before its first word
    """

    def __init__(self, data: np.ndarray) -> None:
        n_bits = 8 * data.size
        if data.size > MAX_RLE_BYTES:
            raise RleError(f"{data.size:,} bytes (limit {MAX_RLE_BYTES:,})")
        if n_bits < _HEADER_BITS:
            raise RleError(f"{data.size} bytes: shorter than the {_HEADER_BITS}-bit header")
        self.data = data
        self._padded: np.ndarray | None = None
        head_bits = int.from_bytes(data[:7].tobytes(), "big") >> (56 - _HEADER_BITS)
        num, word = head_bits >> 21, ((head_bits >> 16) & 31) + 1
        sizes = tuple(((head_bits >> (12 - 4 * k)) & 15) + 1 for k in range(4))
        self.num, self.word = num, word
        empty = np.zeros(0, dtype=np.int64)
        self.start = self.out0 = self.out1 = self.head = empty
        self.repeat = np.zeros(0, dtype=bool)
        if num == 0:
            return
        if n_bits == _HEADER_BITS:
            raise RleError(f"the stream ends after its header but announces {num:,} values")
        # every position read as if a record started there: its first 19 bits hold the
        # repeat bit, the run-size choice and the count (up to 16 bits); by the top 3 bits,
        # 8-entry tables give the count's shift, the bits before the words and the word
        # bits per counted value (0 for a repeat record: one word whatever the count)
        r = np.array(sizes, dtype=np.int32)
        shift_of = np.tile(16 - r, 2)
        fixed_of = np.concatenate([3 + r, 3 + r + word]).astype(np.int32)
        per_count = np.array([word] * 4 + [0] * 4, dtype=np.int32)
        x = data.astype(np.uint32)
        b32 = x << 24
        b32[:-1] |= x[1:] << 16
        b32[:-2] |= x[2:] << 8
        b32[:-3] |= x[3:]
        w19 = ((b32[:, None] >> _BIT_SHIFTS) & 0x7FFFF).ravel()[_HEADER_BITS:].view(np.int32)
        top = w19 >> 16
        count_all = ((w19 & 0xFFFF) >> shift_of.take(top)) + 1
        length = fixed_of.take(top) + per_count.take(top) * count_all
        # the true record starts: the chain of "next record" pointers from the header.
        # jump^16 by four rounds of pointer doubling, a walk from the header in strides
        # of 16 records (a few dozen Python steps), then the 15 records after each stride
        # point in one gather per step; the index past the data is a sink
        sink = n_bits - _HEADER_BITS
        jump = np.empty(sink + 1, dtype=np.int32)
        np.add(np.arange(sink, dtype=np.int32), length, out=jump[:-1])
        jump[-1] = sink
        np.minimum(jump, sink, out=jump)
        far = jump
        for _ in range(_STRIDE_BITS):
            far = far.take(far)
        anchors = [0]
        while anchors[-1] != sink:
            anchors.append(int(far[anchors[-1]]))
        steps = np.empty((1 << _STRIDE_BITS, len(anchors)), dtype=np.int32)
        steps[0] = anchors
        for k in range(1, steps.shape[0]):
            steps[k] = jump.take(steps[k - 1])
        chain = steps.T.ravel()
        starts = chain[: int(np.argmax(chain == sink))].astype(np.int64)
        count = count_all[starts].astype(np.int64)
        made = np.cumsum(count)
        last = int(np.searchsorted(made, num))      # the record that completes num values
        if last == made.size:
            raise RleError(f"the stream ends after {int(made[-1]) if made.size else 0:,} of its "
                           f"{num:,} values")
        starts, count = starts[: last + 1], count[: last + 1]
        if starts[-1] + length[starts[-1]] > sink:
            raise RleError(f"the record at bit {int(starts[-1]) + _HEADER_BITS:,} runs past the end of the "
                           f"{data.size:,} bytes")
        key = top[starts]
        self.repeat = key >= 4
        self.head = fixed_of[key & 3].astype(np.int64)
        self.start = starts + _HEADER_BITS
        self.out1 = np.minimum(made[: last + 1], num)
        self.out0 = made[: last + 1] - count

    def words(self, bit: np.ndarray) -> np.ndarray:
        """The word starting at each bit position, int64, shape like ``bit``."""
        if self._padded is None:
            self._padded = np.zeros(self.data.size + 8, dtype=np.int64)
            self._padded[: self.data.size] = self.data
        return _read(self._padded, bit, self.word)


def _read(padded: np.ndarray, bit: np.ndarray, width: np.ndarray | int) -> np.ndarray:
    """The unsigned ``width``-bit integers (<= 32 bits) starting at bit positions ``bit``
    of the byte array ``padded`` (int64, zero-padded by >= 5 bytes), shape like ``bit``."""
    byte = bit >> 3
    b40 = ((padded[byte] << 32) | (padded[byte + 1] << 24) | (padded[byte + 2] << 16)
           | (padded[byte + 3] << 8) | padded[byte + 4])
    return (b40 >> (40 - (bit & 7) - width)) & ((np.int64(1) << width) - 1)


def _as_bytes(rle: Any) -> np.ndarray:
    """The RLE list (ints 0..255) as uint8, shape (n_bytes,)."""
    if isinstance(rle, (bytes, bytearray)):
        return np.frombuffer(bytes(rle), dtype=np.uint8)
    if type(rle) is not list:
        raise RleError(f"expected a list of byte values, got {type(rle).__name__}")
    if not rle:
        raise RleError("empty")
    try:
        # bytes() checks every item is an int in 0..255, at C speed (JSON true would pass as 1)
        return np.frombuffer(bytes(rle), dtype=np.uint8)
    except (TypeError, ValueError):
        pass
    for k, v in enumerate(rle):
        if type(v) is not int:
            raise RleError(f"item #{k} is not an integer byte ({str(v)[:40]!r})")
        if not 0 <= v <= 255:
            raise RleError(f"item #{k} is {v!r}, not a byte (0..255)")
    raise RleError("not a list of bytes")


def decode_rle_values(rle: Any) -> np.ndarray:
    """Every value of a brush RLE stream, as ``label_studio_sdk.converter.brush.decode_rle``
    returns them (dtype by word size: uint8 up to 8 bits, uint16 up to 16, else uint32, as
    thi.ng's decoder allocates; the SDK always returns uint8).

    Returns
    -------
    ndarray, shape (num,) — for a Label Studio mask, RGBA of shape (height, width, 4) flattened

    Raises
    ------
    RleError
    """
    rec = _Records(_as_bytes(rle))
    dtype = np.uint8 if rec.word < 9 else np.uint16 if rec.word < 17 else np.uint32
    lengths = rec.out1 - rec.out0
    which = np.repeat(np.arange(lengths.size), lengths)
    offset = ragged_arange(lengths)
    bit = rec.start[which] + rec.head[which] + np.where(rec.repeat[which], 0, offset * rec.word)
    return rec.words(bit).astype(dtype)


def decode_rle_mask(rle: Any, width: int, height: int) -> bytes:
    """The mask of a Label Studio brush RLE as canonical run bytes (``metrics.mask_runs``):
    the pixels whose alpha (every 4th value, from the 4th) is not 0.

    Raises
    ------
    RleError
        Malformed stream, or one that does not hold ``4 · width · height`` values.
    """
    rec = _Records(_as_bytes(rle))
    if rec.num != 4 * width * height:
        raise RleError(f"the stream holds {rec.num:,} values; an image of {width} x {height} pixels "
                       f"needs 4 x {width} x {height} = {4 * width * height:,}")
    # repeat records: value index v is pixel v >> 2, channel v & 3; the alpha values of
    # [out0, out1) are those of pixels [out0 >> 2, out1 >> 2)
    rep = np.flatnonzero(rec.repeat)
    on = rep[rec.words(rec.start[rep] + rec.head[rep]) != 0]
    s_rep, e_rep = rec.out0[on] >> 2, rec.out1[on] >> 2
    # literal records: their alpha words one by one
    lit = np.flatnonzero(~rec.repeat)
    first_alpha = rec.out0[lit] >> 2                  # first pixel whose alpha index 4q + 3 >= out0
    n_alpha = np.maximum((rec.out1[lit] >> 2) - first_alpha, 0)
    which = np.repeat(lit, n_alpha)
    pixel = np.repeat(first_alpha, n_alpha) + ragged_arange(n_alpha)
    bit = rec.start[which] + rec.head[which] + (4 * pixel + 3 - rec.out0[which]) * rec.word
    lit_on = pixel[rec.words(bit) != 0]
    starts, lengths = canonical_runs(np.concatenate([s_rep, lit_on]), np.concatenate([e_rep, lit_on + 1]), width)
    return pack_runs(starts, lengths)


def decode_png_mask(url: Any) -> tuple[int, int, bytes]:
    """A PNG data URL (``data:image/png;base64,...``) -> ``(width, height, run bytes)`` of
    its pixels with a nonzero alpha.

    Raises
    ------
    RleError
        Not a string, not a base64 data URL, or not an image Pillow can read.
    """
    from PIL import Image, UnidentifiedImageError

    if type(url) is not str:
        raise RleError(f"expected a data URL string, got {type(url).__name__}")
    if len(url) > MAX_DATA_URL:
        raise RleError(f"data URL of {len(url):,} characters (limit {MAX_DATA_URL:,})")
    head, sep, body = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise RleError(f"not a base64 data URL ({url[:40]!r})")
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RleError(f"bad base64 ({exc})") from None
    try:
        with Image.open(io.BytesIO(raw)) as img:
            img.load()
            alpha = np.asarray(img.convert("RGBA"))[:, :, 3]
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise RleError(f"not a readable image ({str(exc)[:120]})") from None
    h, w = alpha.shape
    return w, h, runs_from_array(alpha)
