"""The pattern source's stamp read back from a decoded luma plane, in numpy:
the Python tests' reader, written apart from zerocam's (capture/src/pattern/
stamp.rs), so a test checks zerocam against a second reading of the same
layout (docs/testing.md, "The stamped pattern").

96 bits (sequence 32, capture time in microseconds 48, CRC-16/CCITT-FALSE
16) in 6 rows of 16 square blocks from the top-left corner, each row followed
by its complement; 16-pixel blocks where the picture is at least 256x192,
else 8, else 4. A bit is its block against the block below; a difference
under 64 luma steps or a wrong CRC reads as None, never a guess.
"""

from typing import Optional, Tuple

import numpy as np

COLUMNS = 16
DATA_ROWS = 6
MIN_CONTRAST = 64


def block_size(width: int, height: int) -> Optional[int]:
    for b in (16, 8, 4):
        if COLUMNS * b <= width and 2 * DATA_ROWS * b <= height:
            return b
    return None


def crc16(data: bytes) -> int:
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def read_stamp(luma: np.ndarray) -> Optional[Tuple[int, int]]:
    """(sequence, timestamp in microseconds) from a 2-D uint8 luma plane, or
    None when the stamp is unreadable."""
    height, width = luma.shape[:2]
    block = block_size(width, height)
    if block is None:
        return None
    inset = block // 4
    side = block - 2 * inset
    y = luma.astype(np.int32)

    def mean(bx: int, by: int) -> int:
        x0, y0 = bx * block + inset, by * block + inset
        return int(y[y0:y0 + side, x0:x0 + side].sum()) // (side * side)

    bits = []
    for row in range(DATA_ROWS):
        for col in range(COLUMNS):
            top, below = mean(col, 2 * row), mean(col, 2 * row + 1)
            if abs(top - below) < MIN_CONTRAST:
                return None
            bits.append(top > below)
    data = bytes(
        sum(0x80 >> j for j in range(8) if bits[8 * i + j]) for i in range(12)
    )
    if crc16(data[:10]) != int.from_bytes(data[10:], "big"):
        return None
    return int.from_bytes(data[:4], "big"), int.from_bytes(data[4:10], "big")
