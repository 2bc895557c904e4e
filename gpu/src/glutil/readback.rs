//! Readback: rectangles of the bound read framebuffer as RGBA8 texels, into
//! CPU memory or into a pixel pack buffer, through one [`Readback`] that owns
//! the pack state while it lives.

use super::errors::int;
use std::ops::Range;

use zerocam_tensor::Element;

use crate::Result;

/// A rectangle of the read framebuffer, in texels (x) and rows (y).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixelRect {
    /// The first texel column.
    pub x: usize,
    /// The first row.
    pub y: usize,
    /// Texels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

/// `(x, y, width, height)` as GL takes them.
fn gl_rect(r: PixelRect) -> Result<[i32; 4]> {
    let what = "glReadPixels (rectangle over i32)";
    Ok([
        int(what, r.x)?,
        int(what, r.y)?,
        int(what, r.width)?,
        int(what, r.height)?,
    ])
}

/// The bytes of a slice of tensor elements.
fn bytes_mut<T: Element>(elements: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(elements);
    // SAFETY: `Element` is sealed to plain numbers (u8..u32, i8..i32, f16,
    // f32, f64): no padding and no invalid bit patterns, so their bytes may be
    // written freely; the slice borrows `elements` exclusively, `len` bytes
    // long, alignment 1.
    unsafe { std::slice::from_raw_parts_mut(elements.as_mut_ptr().cast::<u8>(), len) }
}

/// Reading back from one framebuffer whose RGBA8 rows are `row_texels`
/// apart in the destination: the framebuffer bound for reading, pack
/// alignment 4 and that pack row length, set at [`begin`](Readback::begin)
/// and undone (row length 0, no pack buffer) when it drops. Only this type
/// reads pixels, so the row length its checks assume is the one GL uses.
#[derive(Debug)]
pub struct Readback {
    row_texels: usize,
}

impl Readback {
    /// Binds `framebuffer` for reading, with rows `row_texels` texels apart.
    ///
    /// # Errors
    /// [`GpuError::Gl`] if `row_texels` is over `i32` (GL is not called).
    pub fn begin(framebuffer: u32, row_texels: usize) -> Result<Readback> {
        let row_length = int("glPixelStorei (pack row length)", row_texels)?;
        // SAFETY: binding a name and setting pack state touch no client memory.
        unsafe {
            gl::BindFramebuffer(gl::READ_FRAMEBUFFER, framebuffer);
            gl::PixelStorei(gl::PACK_ALIGNMENT, 4);
            gl::PixelStorei(gl::PACK_ROW_LENGTH, row_length);
        }
        Ok(Readback { row_texels })
    }

    /// Reads `r` into bytes `offset..` of `dst`, its rows `row_texels` texels
    /// apart.
    ///
    /// # Errors
    /// A tensor `BufferTooSmall` if `dst` ends before the last byte GL would
    /// write (GL is not called); [`GpuError::Gl`] for a rectangle over `i32`.
    pub fn to_memory<T: Element>(&self, r: PixelRect, dst: &mut [T], offset: usize) -> Result<()> {
        let rect = gl_rect(r)?;
        let dst = bytes_mut(dst);
        // GL writes `height` rows of `pitch` bytes, the last `width * 4` long
        // (a row length of 0 means rows of exactly `width` texels).
        let pitch = 4 * if self.row_texels == 0 {
            r.width
        } else {
            self.row_texels
        };
        let needed = match (r.width, r.height) {
            (0, _) | (_, 0) => Some(0),
            _ => (r.height - 1)
                .checked_mul(pitch)
                .and_then(|n| n.checked_add(r.width.checked_mul(4)?))
                .and_then(|n| n.checked_add(offset)),
        };
        let needed = needed.unwrap_or(usize::MAX);
        if needed > dst.len() {
            return Err(zerocam_tensor::Error::BufferTooSmall {
                needed,
                available: dst.len(),
            }
            .into());
        }
        let at = dst[offset..].as_mut_ptr();
        // SAFETY: no pack buffer is bound, so GL writes client memory at `at`:
        // the rows counted in `needed` (pack alignment 4 and this row length,
        // set by `begin`; RGBA8 rows are whole words), all inside `dst`.
        unsafe { read_pixels(rect, 0, at.cast()) };
        Ok(())
    }

    /// Reads the texel at `(x, y)` and writes only its bytes `bytes` (of 0..4)
    /// to bytes `offset..` of `dst`.
    ///
    /// # Errors
    /// A tensor `BufferTooSmall` if they do not fit in `dst` (GL is not
    /// called); [`GpuError::Gl`] as [`to_memory`](Readback::to_memory).
    pub fn texel_part_to_memory<T: Element>(
        &self,
        (x, y): (usize, usize),
        bytes: Range<usize>,
        dst: &mut [T],
        offset: usize,
    ) -> Result<()> {
        let dst = bytes_mut(dst);
        let len = dst.len();
        let too_small = || zerocam_tensor::Error::BufferTooSmall {
            needed: offset.saturating_add(bytes.len()),
            available: len,
        };
        let to = offset
            .checked_add(bytes.len())
            .and_then(|end| dst.get_mut(offset..end))
            .ok_or_else(too_small)?;
        let mut texel = [0u8; 4];
        let one = PixelRect {
            x,
            y,
            width: 1,
            height: 1,
        };
        self.to_memory(one, texel.as_mut_slice(), 0)?;
        let from = texel.get(bytes.clone()).ok_or_else(too_small)?;
        to.copy_from_slice(from);
        Ok(())
    }

    /// Reads `r` into pack buffer `buffer` at byte `offset` (GL checks the
    /// range against the buffer's size).
    ///
    /// # Errors
    /// [`GpuError::Gl`] for a rectangle over `i32` (GL is not called).
    pub fn to_buffer(&self, r: PixelRect, buffer: u32, offset: usize) -> Result<()> {
        let rect = gl_rect(r)?;
        // SAFETY: with a pack buffer bound GL takes the pointer as an offset
        // into it and checks the rows against the buffer's size.
        unsafe { read_pixels(rect, buffer, offset as *mut std::ffi::c_void) };
        Ok(())
    }

    /// Reads the texel at `(x, y)` into byte 0 of the (4-byte) pack buffer
    /// `scratch`, then copies its bytes `bytes` on the GPU to byte `offset`
    /// of buffer `buffer`.
    ///
    /// # Errors
    /// As [`to_buffer`](Readback::to_buffer).
    pub fn texel_part_to_buffer(
        &self,
        (x, y): (usize, usize),
        bytes: Range<usize>,
        scratch: u32,
        buffer: u32,
        offset: usize,
    ) -> Result<()> {
        self.to_buffer(
            PixelRect {
                x,
                y,
                width: 1,
                height: 1,
            },
            scratch,
            0,
        )?;
        super::copy_buffer_range(scratch, bytes.start, buffer, offset, bytes.len());
        Ok(())
    }
}

impl Drop for Readback {
    fn drop(&mut self) {
        // SAFETY: restoring pack state touches no client memory.
        unsafe {
            gl::PixelStorei(gl::PACK_ROW_LENGTH, 0);
            gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
        }
    }
}

/// `glReadPixels` of `rect` as RGBA8 with pack buffer `buffer` bound.
///
/// # Safety
/// With `buffer` 0, `ptr` must be valid for the writes the pack state asks
/// for; otherwise it is an offset GL checks.
unsafe fn read_pixels([x, y, width, height]: [i32; 4], buffer: u32, ptr: *mut std::ffi::c_void) {
    // SAFETY: the caller's contract; the context is current (GL thread).
    unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        gl::ReadPixels(x, y, width, height, gl::RGBA, gl::UNSIGNED_BYTE, ptr);
    }
}

/// Test-only: leaves a pack buffer bound and a pack row length of
/// `row_length` set, as a bug between two GL calls would. Harmless to later
/// reads: [`Readback`] sets both before reading.
#[cfg(feature = "fault-injection")]
pub fn leave_pack_state_dirty(buffer: u32, row_length: i32) {
    // SAFETY: binding a name and setting pack state touch no client memory.
    unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        gl::PixelStorei(gl::PACK_ROW_LENGTH, row_length);
    }
}
