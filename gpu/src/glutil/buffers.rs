//! Pixel pack buffers (the PBO tensors' storage and the readback scratch
//! buffer): making, mapping, unmapping, copying between and deleting them.

/// Deletes buffer objects (0 and unknown names are ignored by GL).
pub fn delete_buffers(names: &[u32]) {
    if names.is_empty() {
        return;
    }
    let count = i32::try_from(names.len()).unwrap_or(i32::MAX);
    // SAFETY: GL reads `count` <= names.len() names from the live slice.
    unsafe { gl::DeleteBuffers(count, names.as_ptr()) };
}

/// Whether `name` is a buffer object of the current context (`glIsBuffer`).
pub fn is_buffer(name: u32) -> bool {
    // SAFETY: a query of a name; any value is allowed.
    unsafe { gl::IsBuffer(name) == gl::TRUE }
}

/// A new `GL_PIXEL_PACK_BUFFER` holding a copy of `data` (`usage` as for
/// `glBufferData`), left unbound. Check [`check`](super::check) for allocation failure.
pub fn new_pack_buffer(data: &[u8], usage: u32) -> u32 {
    let size = isize::try_from(data.len()).unwrap_or(isize::MAX);
    let mut b = 0;
    // SAFETY: GL writes one name into `b`; glBufferData reads at most `size`
    // (<= data.len()) bytes from the live slice and copies them.
    unsafe {
        gl::GenBuffers(1, &mut b);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, b);
        gl::BufferData(gl::PIXEL_PACK_BUFFER, size, data.as_ptr().cast(), usage);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
    }
    b
}

/// A new `GL_PIXEL_PACK_BUFFER` of `size` undefined bytes (`usage` as for
/// `glBufferData`), left unbound. Check [`check`](super::check) for allocation failure.
pub fn new_pack_buffer_uninit(size: isize, usage: u32) -> u32 {
    let mut b = 0;
    // SAFETY: GL writes one name into `b`; a NULL data pointer reads nothing.
    unsafe {
        gl::GenBuffers(1, &mut b);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, b);
        gl::BufferData(gl::PIXEL_PACK_BUFFER, size, std::ptr::null(), usage);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
    }
    b
}

/// Maps the first `len` bytes of pack buffer `buffer` with `access` bits
/// (`glMapBufferRange`); NULL if GL refused (see [`check`](super::check)). The pointer is
/// only dereferenced by whoever holds the map, until [`unmap_pack_buffer`].
pub fn map_pack_buffer(buffer: u32, len: usize, access: u32) -> *mut std::ffi::c_void {
    let len = isize::try_from(len).unwrap_or(isize::MAX);
    // SAFETY: binding and mapping a name read no client memory; GL validates
    // the name, range and bits (an error, not UB), and nothing is dereferenced.
    unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        let p = gl::MapBufferRange(gl::PIXEL_PACK_BUFFER, 0, len, access);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
        p
    }
}

/// Unmaps pack buffer `buffer` (`glUnmapBuffer`): false if its contents were lost.
pub fn unmap_pack_buffer(buffer: u32) -> bool {
    // SAFETY: binding and unmapping a name touch no client memory; GL
    // validates the name. A CPU map of it ends here, as its owner asked.
    let ok = unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        let ok = gl::UnmapBuffer(gl::PIXEL_PACK_BUFFER);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
        ok
    };
    ok != gl::FALSE
}

/// Whether pack buffer `buffer` is mapped (`GL_BUFFER_MAPPED`).
pub fn pack_buffer_mapped(buffer: u32) -> bool {
    let mut mapped = 0;
    // SAFETY: GL writes one integer into `mapped`, a live local.
    unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        gl::GetBufferParameteriv(gl::PIXEL_PACK_BUFFER, gl::BUFFER_MAPPED, &mut mapped);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
    }
    mapped != 0
}

/// Copies `len` bytes from byte `from_offset` of buffer `from` to byte
/// `to_offset` of buffer `to` on the GPU (`glCopyBufferSubData`), leaving the
/// copy bindings unbound. Ranges outside either buffer are a GL error.
pub fn copy_buffer_range(from: u32, from_offset: usize, to: u32, to_offset: usize, len: usize) {
    let int = |v: usize| isize::try_from(v).unwrap_or(isize::MAX);
    // SAFETY: binding names and copying between buffer objects touch no client
    // memory; GL checks both ranges against the buffers' sizes (an error, not UB).
    unsafe {
        gl::BindBuffer(gl::COPY_READ_BUFFER, from);
        gl::BindBuffer(gl::COPY_WRITE_BUFFER, to);
        gl::CopyBufferSubData(
            gl::COPY_READ_BUFFER,
            gl::COPY_WRITE_BUFFER,
            int(from_offset),
            int(to_offset),
            int(len),
        );
        gl::BindBuffer(gl::COPY_READ_BUFFER, 0);
        gl::BindBuffer(gl::COPY_WRITE_BUFFER, 0);
    }
}
