//! [`OutputKind`]: what a snapshot file is written as, decided by its name's
//! extension before anything is opened or created, so that a name zerocam
//! does not write (`snap.bmp`) is refused up front instead of becoming a
//! file of something else.

use std::path::Path;

use crate::EncodeError;

/// The snapshot extensions zerocam writes, for messages.
pub const KNOWN_EXTENSIONS: &str = ".png, .jpg/.jpeg, .raw/.yuv";

/// What a snapshot file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// `.png`: the last frame as 8-bit RGB.
    Png,
    /// `.jpg`, `.jpeg`: the last frame as a JPEG (from its YCbCr planes).
    Jpeg,
    /// `.raw`, `.yuv`: every frame's planes, rows without padding, back to
    /// back.
    Raw,
}

impl OutputKind {
    /// The kind `path`'s extension names (any case).
    ///
    /// # Errors
    /// [`EncodeError::Extension`] for any other extension, or none, naming
    /// the ones zerocam writes ([`KNOWN_EXTENSIONS`]).
    pub fn of(path: &Path) -> Result<OutputKind, EncodeError> {
        let ext = extension(path);
        match ext.as_str() {
            "png" => Ok(OutputKind::Png),
            "jpg" | "jpeg" => Ok(OutputKind::Jpeg),
            "raw" | "yuv" => Ok(OutputKind::Raw),
            _ => Err(EncodeError::Extension {
                path: path.to_path_buf(),
                ext,
                known: KNOWN_EXTENSIONS,
            }),
        }
    }

    /// Its name in messages (`PNG`, `JPEG`, `raw`).
    pub fn name(self) -> &'static str {
        match self {
            OutputKind::Png => "PNG",
            OutputKind::Jpeg => "JPEG",
            OutputKind::Raw => "raw",
        }
    }
}

/// `path`'s extension, lower case, without the dot (`""` when none).
pub fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_extension_in_any_case_names_its_kind() {
        for (name, kind) in [
            ("a.png", OutputKind::Png),
            ("a.PNG", OutputKind::Png),
            ("dir.d/a.jpg", OutputKind::Jpeg),
            ("a.JPEG", OutputKind::Jpeg),
            ("a.raw", OutputKind::Raw),
            ("a.yuv", OutputKind::Raw),
        ] {
            assert_eq!(OutputKind::of(Path::new(name)).ok(), Some(kind), "{name}");
        }
    }

    #[test]
    fn other_extensions_are_refused_naming_the_known_ones() {
        for (name, ext) in [("snap.bmp", "bmp"), ("snap", ""), ("snap.JPG.gz", "gz")] {
            let e = OutputKind::of(Path::new(name)).expect_err(name);
            assert!(
                matches!(&e, EncodeError::Extension { ext: got, .. } if got == ext),
                "{e}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains(".png") && msg.contains(".jpg") && msg.contains(".raw"),
                "{msg}"
            );
        }
    }
}
