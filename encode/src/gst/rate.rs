//! An encoder element's rate control from an [`EncoderConfig`]: the bit
//! rate and GOP on whatever properties the element has for them.

use gstreamer as gst;
use gstreamer::glib;
use gstreamer::prelude::*;

use crate::encoder::EncoderConfig;

/// Sets `config`'s bit rate and GOP on the properties `enc` has for them.
pub(crate) fn rate_control(enc: &gst::Element, config: &EncoderConfig) {
    let name = enc
        .factory()
        .map(|f| f.name().to_string())
        .unwrap_or_default();
    if name.starts_with("v4l2") {
        // V4L2 encoders take controls, not properties.
        let mut controls = gst::Structure::builder("controls");
        if let Some(b) = config.bitrate {
            controls = controls.field("video_bitrate", i32::try_from(b).unwrap_or(i32::MAX));
        }
        if let Some(g) = config.gop {
            controls = controls
                .field("video_gop_size", i32::try_from(g).unwrap_or(i32::MAX))
                .field("h264_i_frame_period", i32::try_from(g).unwrap_or(i32::MAX));
        }
        if (config.bitrate.is_some() || config.gop.is_some())
            && enc.find_property("extra-controls").is_some()
        {
            enc.set_property("extra-controls", controls.build());
        }
        return;
    }
    if name == "x264enc" || name == "x265enc" {
        // No lookahead, no B-frames: one access unit per frame, in order.
        enc.set_property_from_str("tune", "zerolatency");
    }
    if let (Some(bitrate), Some(spec)) = (config.bitrate, enc.find_property("bitrate")) {
        let blurb = spec.blurb().unwrap_or_default().to_ascii_lowercase();
        let kbps = blurb.contains("kbit") || blurb.contains("kbps");
        let value = if kbps {
            bitrate.div_ceil(1000)
        } else {
            bitrate
        };
        set_number(enc, &spec, u64::from(value));
    }
    if let Some(gop) = config.gop {
        for prop in ["key-int-max", "gop-size", "keyframe-max-dist"] {
            if let Some(spec) = enc.find_property(prop) {
                set_number(enc, &spec, u64::from(gop));
                break;
            }
        }
    }
}

/// Sets the integer property `spec` of `enc` to `value`, clamped to the
/// property's range (a value out of range would be refused).
fn set_number(enc: &gst::Element, spec: &glib::ParamSpec, value: u64) {
    let name = spec.name();
    let wide = i128::from(value);
    let clamp = |min: i128, max: i128| wide.clamp(min, max);
    if let Some(p) = spec.downcast_ref::<glib::ParamSpecUInt>() {
        let v = clamp(p.minimum().into(), p.maximum().into());
        enc.set_property(name, u32::try_from(v).unwrap_or(p.maximum()));
    } else if let Some(p) = spec.downcast_ref::<glib::ParamSpecInt>() {
        let v = clamp(p.minimum().into(), p.maximum().into());
        enc.set_property(name, i32::try_from(v).unwrap_or(p.maximum()));
    } else if let Some(p) = spec.downcast_ref::<glib::ParamSpecUInt64>() {
        let v = clamp(p.minimum().into(), p.maximum().into());
        enc.set_property(name, u64::try_from(v).unwrap_or(p.maximum()));
    } else if let Some(p) = spec.downcast_ref::<glib::ParamSpecInt64>() {
        let v = clamp(p.minimum().into(), p.maximum().into());
        enc.set_property(name, i64::try_from(v).unwrap_or(p.maximum()));
    } else {
        log::warn!(
            "{}: property {name} is not an integer; left as it is",
            enc.name()
        );
    }
}
