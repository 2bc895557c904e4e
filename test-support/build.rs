//! Tells the CUDA double's loader which rustc builds the tests: it compiles
//! the double (`cuda/tests/double/`) with the same one.

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    println!("cargo:rustc-env=ZEROCAM_BUILD_RUSTC={rustc}");
}
