//! Which container a recorder writes, from its file name's extension (read
//! as `zerocam capture`'s snapshots are: [`crate::output_kind::extension`]).

use std::path::Path;

use crate::{Codec, EncodeError};

/// The extensions a recorder writes, for messages.
pub const KNOWN_EXTENSIONS: &str = ".mp4 and .h264";

/// A recorder's container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// `.mp4`: ISO BMFF, timestamps kept.
    Mp4,
    /// `.h264`: the raw Annex-B stream.
    AnnexB,
}

impl Container {
    /// The container `path`'s extension names (any case).
    ///
    /// # Errors
    /// [`EncodeError::Extension`] for any other (or none), naming the ones
    /// written.
    pub fn of(path: &Path) -> Result<Container, EncodeError> {
        let ext = crate::output_kind::extension(path);
        match ext.as_str() {
            "mp4" => Ok(Container::Mp4),
            "h264" => Ok(Container::AnnexB),
            _ => Err(EncodeError::Extension {
                path: path.to_path_buf(),
                ext,
                known: KNOWN_EXTENSIONS,
            }),
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Container::Mp4 => "MP4",
            Container::AnnexB => "Annex-B H.264",
        }
    }

    /// Whether it holds `codec`.
    pub fn holds(self, codec: Codec) -> bool {
        codec == Codec::H264
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_decides_and_others_are_refused_naming_the_known() {
        assert_eq!(
            Container::of(Path::new("a/clip.MP4")).ok(),
            Some(Container::Mp4)
        );
        assert_eq!(
            Container::of(Path::new("clip.h264")).ok(),
            Some(Container::AnnexB)
        );
        for bad in ["clip.avi", "clip", "clip.mkv"] {
            let e = Container::of(Path::new(bad)).err().map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|m| m.contains(".mp4 and .h264")),
                "{e:?}"
            );
        }
    }
}
