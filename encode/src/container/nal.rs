//! Annex-B byte streams: NAL units between start codes.

/// H.264 `nal_unit_type` of a sequence parameter set.
pub(crate) const SPS: u8 = 7;
/// H.264 `nal_unit_type` of a picture parameter set.
pub(crate) const PPS: u8 = 8;
/// H.264 `nal_unit_type` of an access unit delimiter.
pub(crate) const AUD: u8 = 9;

/// The NAL units of an Annex-B stream, start codes (`00 00 01`, `00 00 00
/// 01`) and trailing zero bytes removed. Bytes before the first start code
/// are skipped.
pub(crate) fn units(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= data.len() {
        if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 {
            starts.push((i, i + 3));
            i += 3;
        } else {
            i += 1;
        }
    }
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .map(|&(code, _)| code)
        .chain(std::iter::once(data.len()))
        .collect();
    starts
        .into_iter()
        .zip(ends)
        .map(move |((_, begin), end)| {
            let mut unit = &data[begin..end];
            while let [rest @ .., 0] = unit {
                unit = rest;
            }
            unit
        })
        .filter(|u| !u.is_empty())
}

/// The `nal_unit_type` of an H.264 NAL unit.
pub(crate) fn kind(unit: &[u8]) -> u8 {
    unit.first().map_or(0, |b| b & 0x1f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_split_at_three_and_four_byte_start_codes() {
        let s = [
            0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 0,
        ];
        let u: Vec<&[u8]> = units(&s).collect();
        assert_eq!(u, vec![&[0x67, 1, 2][..], &[0x68, 3], &[0x65, 4]]);
        assert_eq!(u.iter().map(|u| kind(u)).collect::<Vec<_>>(), [7, 8, 5]);
        assert_eq!(units(&[1, 2, 3]).count(), 0);
    }
}
