//! libzerocam.so's soname: `libzerocam.so.<ABI version>`, so a program linked
//! against one ABI refuses to load an incompatible library (installed as
//! `libzerocam.so.1` by `capi/install`, with `libzerocam.so` linking to it).

fn main() {
    // Keep in step with ZEROCAM_ABI_VERSION in src/lib.rs (a test checks).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzerocam.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
