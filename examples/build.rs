//! With feature `litert`: records `LITERT_LIB_DIR` (the folder of
//! `libLiteRt.so`, which `litert-sys` links against) as the binaries' and
//! tests' run path, so `face_detect` runs without `LD_LIBRARY_PATH`. Cargo
//! does not pass a dependency's link arguments on; without the variable (the
//! crate's own download) nothing is added.

fn main() {
    println!("cargo:rerun-if-env-changed=LITERT_LIB_DIR");
    if std::env::var_os("CARGO_FEATURE_LITERT").is_none() {
        return;
    }
    if let Some(dir) = std::env::var_os("LITERT_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.to_string_lossy());
    }
}
