//! A frame's sequence number and capture time, drawn into its picture in
//! blocks big enough to survive lossy encoding, and read back from what a
//! decoder gives: the check that what a viewer shows is the frame that was
//! captured.
//!
//! The stamp sits in the top-left corner: 96 bits (the sequence, 32 bits;
//! the capture time in microseconds of `CLOCK_MONOTONIC`, its low 48 bits;
//! a CRC-16 of both) in 6 rows of 16 square blocks, each row followed by its
//! complement. A bit is read as the difference of a block and the block
//! below it, so a decoder's offset or gain on the whole picture cannot flip
//! it; a difference too small to tell, or a CRC that does not match, makes
//! the stamp unreadable ([`read_stamp`] returns `None`), never a guess.
//! The blocks are neutral grey in chroma, and 16 pixels wide where the
//! picture is at least 256x192: a macroblock each, at macroblock edges.

/// Bits in a row of blocks.
const COLUMNS: usize = 16;
/// Rows of data (each followed by its complement).
const DATA_ROWS: usize = 6;
/// Every bit: sequence (32), time (48), CRC-16 (16).
const BITS: usize = COLUMNS * DATA_ROWS;
/// The time's bits kept: 48 bits of microseconds are 8.9 years.
const TIME_MASK: u64 = (1 << 48) - 1;
/// Block sizes tried, largest first.
const BLOCKS: [usize; 3] = [16, 8, 4];
/// The least difference of a block and its complement, in luma steps, for
/// a bit to count (the two are 219 apart when drawn, in limited range).
const MIN_CONTRAST: i32 = 64;

/// What a stamp carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// The frame's sequence number ([`Frame::sequence`](crate::Frame::sequence)).
    pub sequence: u32,
    /// Its capture time, microseconds of `CLOCK_MONOTONIC`, low 48 bits.
    pub timestamp_us: u64,
}

impl Stamp {
    /// `sequence` at `timestamp` (a `CLOCK_MONOTONIC` time, as
    /// [`Frame::timestamp`](crate::Frame::timestamp)), its
    /// microseconds' low 48 bits kept.
    pub fn new(sequence: u32, timestamp: std::time::Duration) -> Stamp {
        let us = u64::try_from(timestamp.as_micros()).unwrap_or(u64::MAX);
        Stamp {
            sequence,
            timestamp_us: us & TIME_MASK,
        }
    }

    /// How long ago this stamp's frame was captured: `CLOCK_MONOTONIC` now
    /// less its time (on the machine that stamped it, whose clock it is),
    /// both as 48-bit microseconds. A reader's capture-to-picture latency.
    pub fn age(&self) -> std::time::Duration {
        let now = Stamp::new(0, crate::frame::stats::monotonic_now()).timestamp_us;
        std::time::Duration::from_micros(now.wrapping_sub(self.timestamp_us) & TIME_MASK)
    }

    /// The 96 bits, first bit first.
    fn bits(&self) -> [bool; BITS] {
        let mut bytes = [0u8; 12];
        bytes[..4].copy_from_slice(&self.sequence.to_be_bytes());
        bytes[4..10].copy_from_slice(&(self.timestamp_us & TIME_MASK).to_be_bytes()[2..]);
        let crc = crc16(&bytes[..10]);
        bytes[10..].copy_from_slice(&crc.to_be_bytes());
        std::array::from_fn(|i| bytes[i / 8] & (0x80 >> (i % 8)) != 0)
    }

    /// The stamp these bits carry, if their CRC matches.
    fn from_bits(bits: &[bool; BITS]) -> Option<Stamp> {
        let mut bytes = [0u8; 12];
        for (i, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
            bytes[i / 8] |= 0x80 >> (i % 8);
        }
        let crc = u16::from_be_bytes([bytes[10], bytes[11]]);
        if crc16(&bytes[..10]) != crc {
            return None;
        }
        let mut time = [0u8; 8];
        time[2..].copy_from_slice(&bytes[4..10]);
        Some(Stamp {
            sequence: u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            timestamp_us: u64::from_be_bytes(time),
        })
    }
}

/// CRC-16/CCITT-FALSE (polynomial 0x1021, initial 0xFFFF): ten bytes, once
/// a frame, not worth a dependency.
fn crc16(data: &[u8]) -> u16 {
    let mut crc = 0xFFFFu16;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The side of a stamp's block in a `width`x`height` picture (16, 8 or 4
/// pixels), or `None` when even 4-pixel blocks do not fit (64x48).
pub fn block_size(width: usize, height: usize) -> Option<usize> {
    BLOCKS
        .into_iter()
        .find(|b| COLUMNS * b <= width && 2 * DATA_ROWS * b <= height)
}

/// The stamp's area in a `width`x`height` picture: `(width, height)` in
/// pixels from the top-left corner, or `None` when it does not fit.
pub fn stamp_area(width: usize, height: usize) -> Option<(usize, usize)> {
    block_size(width, height).map(|b| (COLUMNS * b, 2 * DATA_ROWS * b))
}

/// Each block of the stamp: `(x, y, side, white)` in pixels.
pub(crate) fn blocks(
    stamp: &Stamp,
    block: usize,
) -> impl Iterator<Item = (usize, usize, usize, bool)> {
    let bits = stamp.bits();
    (0..2 * DATA_ROWS).flat_map(move |row| {
        (0..COLUMNS).map(move |col| {
            let bit = bits[(row / 2) * COLUMNS + col];
            // Odd rows: the complement of the row above.
            let white = bit != (row % 2 == 1);
            (col * block, row * block, block, white)
        })
    })
}

/// Reads the stamp from a decoded luma plane (`stride` bytes a row, at
/// least `width`), or `None` when it is unreadable: the picture too small
/// for one, a block too close to its complement to tell (a mangled or
/// starved picture, a wrong crop), or a CRC that does not match.
pub fn read_stamp(luma: &[u8], width: usize, height: usize, stride: usize) -> Option<Stamp> {
    let block = block_size(width, height)?;
    let (area_w, area_h) = stamp_area(width, height)?;
    if stride < width || luma.len() < (area_h - 1) * stride + area_w {
        return None;
    }
    // The inner half of each block: its edges are where an encoder rings.
    let inset = block / 4;
    let side = block - 2 * inset;
    let mean = |x: usize, y: usize| -> i32 {
        let mut sum = 0u32;
        for r in y + inset..y + inset + side {
            let row = &luma[r * stride + x + inset..][..side];
            sum += row.iter().map(|&v| u32::from(v)).sum::<u32>();
        }
        i32::try_from(sum / (side * side) as u32).unwrap_or(0)
    };
    let mut bits = [false; BITS];
    for (i, bit) in bits.iter_mut().enumerate() {
        let (row, col) = (i / COLUMNS, i % COLUMNS);
        let x = col * block;
        let top = mean(x, 2 * row * block);
        let below = mean(x, (2 * row + 1) * block);
        if (top - below).abs() < MIN_CONTRAST {
            return None;
        }
        *bit = top > below;
    }
    Stamp::from_bits(&bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `width`x`height` luma plane of `fill`, `stamp` drawn on it.
    fn drawn(stamp: &Stamp, width: usize, height: usize, fill: u8) -> Vec<u8> {
        let mut luma = vec![fill; width * height];
        let block = block_size(width, height).unwrap();
        for (x, y, side, white) in blocks(stamp, block) {
            for r in y..y + side {
                luma[r * width + x..][..side].fill(if white { 235 } else { 16 });
            }
        }
        luma
    }

    #[test]
    fn stamps_read_back_at_every_block_size() {
        let stamps = [
            Stamp::new(0, std::time::Duration::ZERO),
            Stamp::new(1, std::time::Duration::from_micros(33_333)),
            Stamp::new(u32::MAX, std::time::Duration::from_secs(86_400 * 365)),
        ];
        for (w, h) in [(1280, 720), (640, 480), (320, 180), (64, 48)] {
            for s in &stamps {
                let luma = drawn(s, w, h, 128);
                assert_eq!(read_stamp(&luma, w, h, w), Some(*s), "{w}x{h}");
            }
        }
        assert_eq!(block_size(1280, 720), Some(16));
        assert_eq!(block_size(200, 150), Some(8));
        assert_eq!(block_size(63, 48), None);
    }

    #[test]
    fn time_keeps_its_low_48_bits() {
        let s = Stamp::new(7, std::time::Duration::from_micros((1 << 50) + 5));
        assert_eq!(s.timestamp_us, 5);
    }

    #[test]
    fn age_is_now_less_the_capture_time() {
        let now = crate::frame::stats::monotonic_now();
        let s = Stamp::new(1, now.saturating_sub(std::time::Duration::from_millis(40)));
        let age = s.age();
        assert!(age >= std::time::Duration::from_millis(40), "{age:?}");
        assert!(age < std::time::Duration::from_secs(30), "{age:?}");
    }

    #[test]
    fn a_decoders_offset_and_gain_do_not_flip_a_bit() {
        let s = Stamp::new(123_456, std::time::Duration::from_millis(987_654));
        let luma: Vec<u8> = drawn(&s, 640, 480, 90)
            .into_iter()
            .map(|v| (f32::from(v) * 0.8 + 30.0) as u8)
            .collect();
        assert_eq!(read_stamp(&luma, 640, 480, 640), Some(s));
    }

    #[test]
    fn a_mangled_stamp_is_unreadable_never_wrong() {
        let s = Stamp::new(42, std::time::Duration::from_secs(3));
        let (w, h) = (640, 480);
        // A block and its complement both grey: too close to tell.
        let mut luma = drawn(&s, w, h, 128);
        for r in 0..32 {
            luma[r * w + 48..][..16].fill(128);
        }
        assert_eq!(read_stamp(&luma, w, h, w), None);
        // One bit flipped cleanly (block and complement swapped): the CRC.
        let mut luma = drawn(&s, w, h, 128);
        for r in 0..16 {
            let (top, below) = (r * w + 16, (r + 16) * w + 16);
            let (t, b) = (luma[top], luma[below]);
            luma[top..][..16].fill(b);
            luma[below..][..16].fill(t);
        }
        assert_eq!(read_stamp(&luma, w, h, w), None);
        // A starved encoder: the whole picture flattened towards grey.
        let flat: Vec<u8> = drawn(&s, w, h, 128)
            .into_iter()
            .map(|v| (i32::from(v) - 128) / 8 + 128)
            .map(|v| v as u8)
            .collect();
        assert_eq!(read_stamp(&flat, w, h, w), None);
        // A wrong crop: the stamp shifted by half a block.
        let luma = drawn(&s, w, h, 128);
        let cropped: Vec<u8> = (8..h)
            .flat_map(|r| luma[r * w + 8..(r + 1) * w].iter().copied().chain([128; 8]))
            .collect();
        assert_eq!(read_stamp(&cropped, w, h - 8, w), None);
        // Noise, and too little of a plane.
        let noise: Vec<u8> = (0..w * h).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(read_stamp(&noise, w, h, w), None);
        assert_eq!(read_stamp(&luma[..1000], w, h, w), None);
    }
}
