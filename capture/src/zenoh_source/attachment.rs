//! What zerocam's publisher attaches to every sample (Zenoh's attachment,
//! beside the CDR payload): which publisher sent it, the capture's
//! sequence number, and the sample's number on its topic, from which a
//! subscriber counts lost and late samples. ROS 2 tools ignore it.

/// The attachment's length on the wire.
const LEN: usize = 16;

/// A sample's origin and numbers (16 bytes, little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attachment {
    /// The publisher's instance: a new one restarts the numbering.
    pub instance: u32,
    /// The frame's sequence number at the capture source.
    pub sequence: u32,
    /// The sample's number on its topic (0, 1, 2…: gaps are losses).
    pub number: u64,
}

impl Attachment {
    /// The 16 bytes sent.
    pub fn to_bytes(self) -> [u8; LEN] {
        let mut b = [0; LEN];
        b[..4].copy_from_slice(&self.instance.to_le_bytes());
        b[4..8].copy_from_slice(&self.sequence.to_le_bytes());
        b[8..].copy_from_slice(&self.number.to_le_bytes());
        b
    }

    /// Reads one; `None` for any other length (a sender that is not
    /// zerocam: its samples are taken, without loss counting).
    pub fn from_bytes(b: &[u8]) -> Option<Attachment> {
        let b: &[u8; LEN] = b.try_into().ok()?;
        let (instance, rest) = b.split_first_chunk::<4>()?;
        let (sequence, number) = rest.split_first_chunk::<4>()?;
        Some(Attachment {
            instance: u32::from_le_bytes(*instance),
            sequence: u32::from_le_bytes(*sequence),
            number: u64::from_le_bytes(number.try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_lengths() {
        let a = Attachment {
            instance: 7,
            sequence: u32::MAX,
            number: 1 << 40,
        };
        assert_eq!(Attachment::from_bytes(&a.to_bytes()), Some(a));
        assert_eq!(Attachment::from_bytes(&a.to_bytes()[..15]), None);
        assert_eq!(Attachment::from_bytes(&[0; 17]), None);
    }
}
