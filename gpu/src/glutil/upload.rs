//! Texture uploads: a plane's rows into a 2D texture, from CPU memory or from
//! an unpack pixel buffer, in one `glTexSubImage2D` or row by row; nothing is
//! allocated.

use super::errors::int;
use crate::{GpuError, Result};

/// One upload into a 2D texture of `width`x`height` texels of `format`
/// (`GL_RED`, `GL_RG`, `GL_RGB` or `GL_RGBA`, one byte a channel).
#[derive(Debug, Clone, Copy)]
pub struct TexUpload {
    /// The texture (a `GL_TEXTURE_2D`).
    pub texture: u32,
    /// Its internal format, for `allocate`.
    pub internal: u32,
    /// The pixel format of the source rows.
    pub format: u32,
    /// Texels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Bytes from the start of one source row to the next.
    pub stride: usize,
    /// Whether to (re)allocate the texture's storage first (`glTexImage2D`).
    pub allocate: bool,
}

/// Where an upload's rows come from.
#[derive(Debug, Clone, Copy)]
pub enum UploadFrom<'a> {
    /// CPU memory whose byte 0 is the first row's first byte.
    Memory(&'a [u8]),
    /// Pixel buffer `buffer`, bound as `GL_PIXEL_UNPACK_BUFFER` for the
    /// upload, the first row at byte `offset` (GL checks the range).
    UnpackBuffer {
        /// The buffer's name.
        buffer: u32,
        /// The first row's byte offset in it.
        offset: usize,
    },
}

/// Bytes a texel of `format` with one byte a channel.
fn texel_bytes(format: u32) -> Option<usize> {
    match format {
        gl::RED => Some(1),
        gl::RG => Some(2),
        gl::RGB => Some(3),
        gl::RGBA => Some(4),
        _ => None,
    }
}

/// Uploads `from` into `upload.texture` (left bound at `GL_TEXTURE_2D`), with
/// unpack alignment 1 and, where rows are a whole number of texels apart, the
/// unpack row length; other rows go up one by one. The unpack buffer binding
/// and row length are 0 again afterwards. GL's own errors are left for
/// [`check`](super::check).
///
/// # Errors
/// [`GpuError::Gl`] for an unknown `format` or a size over `i32`; a tensor
/// `BufferTooSmall` when `Memory` holds fewer bytes than the rows (GL is not
/// called then).
pub fn upload_texture(upload: &TexUpload, from: UploadFrom<'_>) -> Result<()> {
    let TexUpload {
        texture,
        internal,
        format,
        width,
        height,
        stride,
        allocate,
    } = *upload;
    let texel = texel_bytes(format).ok_or(GpuError::Gl {
        call: "glTexSubImage2D (format not RED, RG, RGB or RGBA)",
        code: gl::INVALID_ENUM,
    })?;
    // Rows a whole number of texels apart go up in one call; others (RGB rows
    // padded to, say, 64 bytes) row by row.
    let whole = stride % texel == 0;
    let row_length = int(
        "glPixelStorei (row length)",
        if whole { stride / texel } else { 0 },
    )?;
    let (w, h) = (
        int("glTexSubImage2D (width)", width)?,
        int("glTexSubImage2D (height)", height)?,
    );
    // The bytes GL reads: `height` rows `pitch` apart, the last `width` texels
    // long (a row length of 0 means rows of exactly `width` texels).
    let pitch = if whole && stride == 0 {
        width * texel
    } else {
        stride
    };
    let needed = match (width, height) {
        (0, _) | (_, 0) => Some(0),
        _ => (height - 1)
            .checked_mul(pitch)
            .and_then(|n| n.checked_add(width.checked_mul(texel)?)),
    };
    let (buffer, base) = match from {
        UploadFrom::Memory(bytes) => {
            let needed = needed.unwrap_or(usize::MAX);
            if needed > bytes.len() {
                return Err(zerocam_tensor::Error::BufferTooSmall {
                    needed,
                    available: bytes.len(),
                }
                .into());
            }
            (0, bytes.as_ptr())
        }
        // With an unpack buffer bound, GL takes the "pointer" as an offset
        // and checks the rows against the buffer's size.
        UploadFrom::UnpackBuffer { buffer, offset } => (buffer, offset as *const u8),
    };
    // SAFETY: the context is current. With `Memory`, no unpack buffer is bound
    // and `base` points at a live slice holding the `needed` bytes GL reads
    // (alignment 1, the row length set here, skips never set by this crate);
    // with `UnpackBuffer`, `base` is an offset GL checks against the bound
    // buffer. The allocation passes NULL: no bytes, or offset 0 of the buffer.
    unsafe {
        gl::BindBuffer(gl::PIXEL_UNPACK_BUFFER, buffer);
        gl::PixelStorei(gl::UNPACK_ALIGNMENT, 1);
        gl::PixelStorei(gl::UNPACK_ROW_LENGTH, row_length);
        gl::BindTexture(gl::TEXTURE_2D, texture);
        if allocate {
            let internal = internal as i32; // a GL enum, well under i32::MAX
            let null = std::ptr::null();
            gl::TexImage2D(
                gl::TEXTURE_2D,
                0,
                internal,
                w,
                h,
                0,
                format,
                gl::UNSIGNED_BYTE,
                null,
            );
        }
        if whole {
            let pixels = base.cast();
            gl::TexSubImage2D(
                gl::TEXTURE_2D,
                0,
                0,
                0,
                w,
                h,
                format,
                gl::UNSIGNED_BYTE,
                pixels,
            );
        } else {
            for row in 0..height {
                // `row < height`: inside the checked range (or a GL-checked
                // offset); `row` fits an i32 as `height` does.
                let (y, pixels) = (row as i32, base.wrapping_add(row * stride).cast());
                gl::TexSubImage2D(
                    gl::TEXTURE_2D,
                    0,
                    0,
                    y,
                    w,
                    1,
                    format,
                    gl::UNSIGNED_BYTE,
                    pixels,
                );
            }
        }
        gl::PixelStorei(gl::UNPACK_ROW_LENGTH, 0);
        gl::BindBuffer(gl::PIXEL_UNPACK_BUFFER, 0);
    }
    Ok(())
}
