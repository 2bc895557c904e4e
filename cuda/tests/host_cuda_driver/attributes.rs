//! Device attributes: an attribute the driver does not know reads as
//! unsupported instead of failing `Cuda::new`; host registration follows
//! HOST_REGISTER_SUPPORTED (99) and READ_ONLY_HOST_REGISTER_SUPPORTED (113).

use zerocam_cuda::{Cuda, CudaError, CudaPath, HostPath, HostRegisterError};
use zerocam_tensor::{Access, ExternalMemory, Tensor};

use crate::common::double::{double, library, serial};
use crate::{assert_clean, buffer_of, cuda, shm};

const HOST_REGISTER_SUPPORTED: i32 = 99;
const READ_ONLY_HOST_REGISTER_SUPPORTED: i32 = 113;

/// Bytes lent read-only (as a decoder's frame): a tensor over them is
/// registered with CU_MEMHOSTREGISTER_READ_ONLY.
struct Lent(Vec<u8>);

// SAFETY: the Vec is never touched again while the tensor lives: the same
// bytes, unchanged.
unsafe impl ExternalMemory for Lent {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

fn read_only(len: usize) -> Tensor<u8> {
    Tensor::<u8>::from_external(Lent(vec![5; len]), &[len], None).unwrap()
}

/// The `register_host` events: `read-only` ends those with CU_MEMHOSTREGISTER_READ_ONLY.
fn registrations() -> Vec<String> {
    let events = double().events();
    events
        .into_iter()
        .filter(|e| e.starts_with("register_host "))
        .collect()
}

#[test]
fn a_driver_older_than_the_attributes_still_opens_and_reads_them_as_unsupported() {
    let _serial = serial();
    let d = double();
    let c = double();
    // CUDA 11.0: it knows 99 but not 113 (CUDA 11.1).
    c.forget_attribute(READ_ONLY_HOST_REGISTER_SUPPORTED);
    let cuda = Cuda::with_library(library(), 0).expect("an unknown attribute is not fatal");
    // The refusals themselves (Auto would copy a refused read map: `staged`).
    cuda.set_host_path(HostPath::Register);
    assert!(!cuda.info().read_only_host_register);
    assert!(cuda.info().host_register);
    assert_eq!(
        cuda.info().unknown_attributes,
        [READ_ONLY_HOST_REGISTER_SUPPORTED]
    );
    // Writable memory registers (without READ_ONLY); read-only memory is
    // refused before the driver sees a flag it does not know.
    let t = shm(4096, 1);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    let ro = read_only(4096);
    let (base, len) = buffer_of(&ro);
    match cuda.map(&ro, Access::Read) {
        Err(CudaError::HostRegister(e @ HostRegisterError::ReadOnlyUnsupported { .. })) => {
            let expected = HostRegisterError::ReadOnlyUnsupported {
                ordinal: 0,
                reported: None,
                base,
                len,
            };
            assert_eq!(e, expected);
            let text = e.to_string();
            assert!(text.contains("is unknown to the driver"), "{text}");
            assert!(text.contains("map the buffer read-write"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(d.count("cuMemHostRegister_v2"), 1);
    assert!(!registrations()[0].ends_with("read-only"));
    drop((map, t, ro, cuda));
    assert_clean();

    // Older still: none of the attributes is known; other failures stay fatal.
    d.reset();
    for attribute in [18, 19, 41, 75, 76, 91, 99, 113] {
        c.forget_attribute(attribute);
    }
    let cuda = Cuda::with_library(library(), 0).unwrap();
    let info = cuda.info();
    assert_eq!(info.unknown_attributes, [75, 76, 18, 19, 41, 91, 99, 113]);
    assert_eq!(info.compute_capability, (0, 0));
    assert!(!info.integrated && !info.host_register);
    // A driver older than 99 (CUDA 10.2 on JetPack 4) is still asked to
    // register writable memory, as such drivers could.
    let t = shm(4096, 1);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    assert_eq!(d.count("cuMemHostRegister_v2"), 1);
    drop((map, t, cuda));
    assert_clean();
    d.reset();
    d.fail_next("cuDeviceGetAttribute", 101);
    match Cuda::with_library(library(), 0) {
        Err(CudaError::Driver { call, code, .. }) => {
            assert_eq!((call, code), ("cuDeviceGetAttribute", 101));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn host_registration_is_refused_with_a_typed_error_where_attribute_99_is_0() {
    let _serial = serial();
    let d = double();
    double().set_attribute(HOST_REGISTER_SUPPORTED, 0);
    let cuda = cuda();
    assert!(!cuda.info().host_register);
    cuda.set_host_path(HostPath::Register);
    let t = shm(4096, 1);
    match cuda.map(&t, Access::Read) {
        Err(CudaError::HostRegister(e)) => {
            let expected = HostRegisterError::Unsupported {
                ordinal: 0,
                reported: Some(0),
            };
            assert_eq!(e, expected);
            let text = e.to_string();
            assert!(
                text.contains("CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED is 0"),
                "{text}"
            );
            assert!(text.contains("GL buffer interop"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        d.count("cuMemHostRegister_v2"),
        0,
        "refused before the driver"
    );
    // Auto copies it instead (the staged path), still without asking.
    cuda.set_host_path(HostPath::Auto);
    let map = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(map.path(), CudaPath::Staged);
    assert_eq!(d.count("cuMemHostRegister_v2"), 0);
    drop((map, t, cuda));
    assert_clean();
}

#[test]
fn read_only_memory_registers_read_only_where_113_is_1_and_is_refused_where_it_is_0() {
    let _serial = serial();
    let d = double();
    let cuda = cuda();
    let ro = read_only(4096);
    let map = cuda.map(&ro, Access::Read).unwrap();
    let mut back = [0u8; 16];
    map.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, [5; 16]);
    assert!(
        registrations()[0].ends_with(" read-only"),
        "{:?}",
        d.events()
    );
    drop((map, ro, cuda));
    assert_clean();

    // The device cannot: a typed error, and writable memory still registers.
    d.reset();
    double().set_attribute(READ_ONLY_HOST_REGISTER_SUPPORTED, 0);
    let cuda = crate::cuda();
    cuda.set_host_path(HostPath::Register);
    let ro = read_only(4096);
    let (base, len) = buffer_of(&ro);
    match cuda.map(&ro, Access::Read) {
        Err(CudaError::HostRegister(e)) => {
            let expected = HostRegisterError::ReadOnlyUnsupported {
                ordinal: 0,
                reported: Some(0),
                base,
                len,
            };
            assert_eq!(e, expected);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        d.count("cuMemHostRegister_v2"),
        0,
        "refused before the driver"
    );
    let t = shm(4096, 1);
    let map = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(registrations().len(), 1);
    assert!(!registrations()[0].ends_with("read-only"));
    drop((map, t, ro, cuda));
    assert_clean();
}
