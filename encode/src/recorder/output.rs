//! Which container a recorder writes, from its file name's extension (read
//! as `zerocam capture`'s snapshots are: [`crate::output_kind::extension`]).

use std::path::Path;

use crate::{Codec, EncodeError};

/// The extensions a recorder writes, for messages.
pub const KNOWN_EXTENSIONS: &str = ".mp4, .h264, .hevc/.h265, .mjpeg/.mjpg and .fwht";

/// A recorder's container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// `.mp4`: ISO BMFF holding H.264, timestamps kept.
    Mp4,
    /// A codec's bare stream: `.h264`, `.hevc`/`.h265` (Annex-B),
    /// `.mjpeg`/`.mjpg` (JPEGs back to back), `.fwht` (vicodec's FWHT).
    Stream(Codec),
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
            "h264" => Ok(Container::Stream(Codec::H264)),
            "hevc" | "h265" => Ok(Container::Stream(Codec::Hevc)),
            "mjpeg" | "mjpg" => Ok(Container::Stream(Codec::Mjpeg)),
            "fwht" => Ok(Container::Stream(Codec::Fwht)),
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
            Container::Stream(Codec::H264) => "Annex-B H.264",
            Container::Stream(Codec::Hevc) => "Annex-B HEVC",
            Container::Stream(Codec::Mjpeg) => "Motion JPEG",
            Container::Stream(Codec::Fwht) => "FWHT",
        }
    }

    /// The one codec it holds: what `--codec` defaults to for it.
    pub fn codec(self) -> Codec {
        match self {
            Container::Mp4 => Codec::H264,
            Container::Stream(c) => c,
        }
    }

    /// Whether it holds `codec`.
    pub fn holds(self, codec: Codec) -> bool {
        codec == self.codec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_decides_and_others_are_refused_naming_the_known() {
        let of = |p: &str| Container::of(Path::new(p)).ok();
        assert_eq!(of("a/clip.MP4"), Some(Container::Mp4));
        assert_eq!(of("clip.h264"), Some(Container::Stream(Codec::H264)));
        assert_eq!(of("clip.h265"), Some(Container::Stream(Codec::Hevc)));
        assert_eq!(of("clip.mjpg"), Some(Container::Stream(Codec::Mjpeg)));
        assert_eq!(of("clip.fwht"), Some(Container::Stream(Codec::Fwht)));
        assert_eq!(of("clip.fwht").map(Container::codec), Some(Codec::Fwht));
        assert!(Container::Mp4.holds(Codec::H264) && !Container::Mp4.holds(Codec::Fwht));
        for bad in ["clip.avi", "clip", "clip.mkv"] {
            let e = Container::of(Path::new(bad)).err().map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|m| m.contains(KNOWN_EXTENSIONS)),
                "{e:?}"
            );
        }
    }
}
