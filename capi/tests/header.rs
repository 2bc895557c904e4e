//! `include/zerocam.h` is what cbindgen makes of `capi/src` now: CI fails on
//! a stale header. `ZEROCAM_BLESS=1 cargo test -p zerocam-capi --test header`
//! rewrites it.

#[test]
fn the_checked_in_header_is_what_cbindgen_makes_of_the_source() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml"))
        .unwrap_or_else(|e| panic!("capi/cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen: {e}"));
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = format!("{dir}/include/zerocam.h");
    if std::env::var_os("ZEROCAM_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap_or_else(|e| panic!("{path}: {e}"));
        return;
    }
    let current = std::fs::read(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "{path} is stale (the C API changed): regenerate it with \
         `ZEROCAM_BLESS=1 cargo test -p zerocam-capi --test header` and commit it"
    );
}
