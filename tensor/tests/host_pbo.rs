//! PBO tensors: the map / unmap / delete protocol between a tensor and the GL
//! backend's `PboOps`. The GL side here is a plain in-process implementation
//! that records calls (real GL PBOs are exercised by the GPU path's tests).
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use zerocam_tensor::{Access, Error, PboOps, Region, Result, Tensor, TensorMemory};

#[derive(Debug, Default)]
struct RecordingGl {
    memory: Mutex<Vec<u64>>,
    calls: Mutex<Vec<String>>,
    gone: std::sync::atomic::AtomicBool,
}

// SAFETY: `map` hands out a pointer into `memory`, a Vec of u64 (8-byte
// aligned; we allocate it with 64-byte alignment below), never resized.
unsafe impl PboOps for RecordingGl {
    fn map(&self, buffer: u32, len: usize, access: Access) -> Result<NonNull<u8>> {
        if self.gone.load(std::sync::atomic::Ordering::SeqCst) {
            // What a GL backend gives once its thread has gone (`PboOps`).
            return Err(Error::PboDisconnected { buffer });
        }
        self.calls
            .lock()
            .unwrap()
            .push(format!("map {buffer} {len} {access}"));
        let mut m = self.memory.lock().unwrap();
        let p = m.as_mut_ptr() as *mut u8;
        let aligned = p.wrapping_add(p.align_offset(64));
        Ok(NonNull::new(aligned).unwrap())
    }

    fn unmap(&self, buffer: u32) -> Result<()> {
        self.calls.lock().unwrap().push(format!("unmap {buffer}"));
        Ok(())
    }

    fn delete(&self, buffer: u32) {
        self.calls.lock().unwrap().push(format!("delete {buffer}"));
    }
}

fn gl() -> Arc<RecordingGl> {
    Arc::new(RecordingGl {
        memory: Mutex::new(vec![0u64; 64]),
        ..Default::default()
    })
}

#[test]
fn pbo_maps_on_first_access_and_unmaps_after_the_last() {
    let gl = gl();
    let t = Tensor::<f32>::from_pbo(gl.clone(), 7, &[4, 8], None).unwrap();
    assert_eq!(t.memory(), TensorMemory::Pbo);
    {
        let top = t.view(Region::new(0, 0, 8, 2)).unwrap();
        let bottom = t.view(Region::new(0, 2, 8, 2)).unwrap();
        let mut a = top.map().unwrap();
        let b = bottom.map().unwrap();
        a[0] = 1.5;
        assert_eq!(b.len(), 16);
    }
    assert_eq!(t.map_read().unwrap()[0], 1.5);
    drop(t);
    let calls = gl.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        [
            "map 7 128 read-write",
            "unmap 7",
            "map 7 128 read",
            "unmap 7",
            "delete 7"
        ]
    );
}

#[test]
fn a_read_map_does_not_widen_to_write_while_held() {
    let gl = gl();
    let t = Tensor::<u8>::from_pbo(gl, 1, &[2, 8], None).unwrap();
    let _r = t.view(Region::new(0, 0, 8, 1)).unwrap().map_read().unwrap();
    let e = t.view(Region::new(0, 1, 8, 1)).unwrap().map().unwrap_err();
    assert!(matches!(e, Error::Pbo { buffer: 1, .. }), "{e}");
}

#[test]
fn a_pbo_whose_gl_thread_is_gone_fails_cleanly() {
    let gl = gl();
    let t = Tensor::<u8>::from_pbo(gl.clone(), 3, &[16], None).unwrap();
    gl.gone.store(true, std::sync::atomic::Ordering::SeqCst);
    let e = t.map().unwrap_err();
    assert!(matches!(e, Error::PboDisconnected { buffer: 3 }), "{e:?}");
    assert!(e.to_string().contains("GL thread has exited"), "{e}");
    assert!(matches!(
        t.clone_fd(),
        Err(Error::NoFd {
            memory: TensorMemory::Pbo
        })
    ));
}
