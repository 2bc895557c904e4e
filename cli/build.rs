//! Tells the CLI tests which rustc built them: they compile the CUDA driver
//! test double (`cuda/tests/double/`) with it.

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    println!("cargo:rustc-env=ZEROCAM_BUILD_RUSTC={rustc}");
}
