//! [`Detections`]: a model's boxes for one frame, as posted to
//! `POST /detections` and carried to the page in each MJPEG part.
//!
//! ```json
//! {"sequence": 1234, "width": 1280, "height": 720,
//!  "boxes": [{"x": 100, "y": 80, "w": 64, "h": 64, "score": 0.93, "label": "face"}]}
//! ```
//!
//! Coordinates are in pixels of a `width`x`height` picture (the frame's
//! size when left out): the page scales them to what it shows. Everything
//! from the poster is bounded: at most [`MAX_BOXES`] boxes, labels of at
//! most [`MAX_LABEL`] characters, finite numbers.

use serde_json::{json, Map, Value};

/// The most boxes one post holds.
pub const MAX_BOXES: usize = 64;
/// The longest label, in characters.
pub const MAX_LABEL: usize = 64;
/// The largest side a `width`/`height` or coordinate may name.
const MAX_SIDE: f64 = 65536.0;

/// One box.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// Left edge, pixels.
    pub x: f64,
    /// Top edge, pixels.
    pub y: f64,
    /// Width, pixels.
    pub w: f64,
    /// Height, pixels.
    pub h: f64,
    /// Score, 0–1 (`None`: not drawn).
    pub score: Option<f64>,
    /// Label (`""`: none).
    pub label: String,
}

/// A model's boxes for the frame of `sequence`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Detections {
    /// The frame's sequence number (the capture's, as the MJPEG parts and
    /// the sharing socket carry it).
    pub sequence: u32,
    /// The picture size the coordinates are in (`None`: the frame's).
    pub size: Option<(u32, u32)>,
    /// The boxes.
    pub boxes: Vec<Detection>,
}

impl Detections {
    /// Reads a post's JSON body.
    ///
    /// # Errors
    /// A message naming what is wrong (sent back with a 400).
    pub fn from_json(body: &[u8]) -> Result<Detections, String> {
        let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
        let o = v.as_object().ok_or("not a JSON object")?;
        let sequence = o
            .get("sequence")
            .and_then(Value::as_u64)
            .and_then(|s| u32::try_from(s).ok())
            .ok_or("\"sequence\" must be a frame sequence number (0 to 2^32-1)")?;
        let side = |key: &str| -> Result<Option<u32>, String> {
            match o.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .filter(|&n| n > 0 && (n as f64) <= MAX_SIDE)
                    .map(|n| Some(n as u32))
                    .ok_or_else(|| format!("\"{key}\" must be 1 to {MAX_SIDE} pixels")),
            }
        };
        let size = match (side("width")?, side("height")?) {
            (Some(w), Some(h)) => Some((w, h)),
            (None, None) => None,
            _ => return Err("\"width\" and \"height\" go together".into()),
        };
        let boxes = match o.get("boxes") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => return Err("\"boxes\" must be an array".into()),
        };
        if boxes.len() > MAX_BOXES {
            return Err(format!(
                "{} boxes, more than the {MAX_BOXES} taken",
                boxes.len()
            ));
        }
        let boxes = boxes
            .iter()
            .enumerate()
            .map(|(i, b)| detection(b).map_err(|e| format!("box {i}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Detections {
            sequence,
            size,
            boxes,
        })
    }

    /// As JSON for the page (ASCII only, so it fits an HTTP header).
    pub fn to_json(&self) -> String {
        let boxes: Vec<Value> = self
            .boxes
            .iter()
            .map(|b| {
                let mut m = Map::new();
                for (k, v) in [("x", b.x), ("y", b.y), ("w", b.w), ("h", b.h)] {
                    m.insert(k.into(), json!(v));
                }
                if let Some(s) = b.score {
                    m.insert("score".into(), json!(s));
                }
                if !b.label.is_empty() {
                    m.insert("label".into(), json!(b.label));
                }
                Value::Object(m)
            })
            .collect();
        let mut v = json!({ "sequence": self.sequence, "boxes": boxes });
        if let Some((w, h)) = self.size {
            v["width"] = json!(w);
            v["height"] = json!(h);
        }
        ascii_json(&v.to_string())
    }
}

/// One box of a post.
fn detection(v: &Value) -> Result<Detection, String> {
    let o = v.as_object().ok_or("not an object")?;
    let num = |key: &str, min: f64| -> Result<f64, String> {
        o.get(key)
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite() && *n >= min && n.abs() <= MAX_SIDE)
            .ok_or_else(|| format!("\"{key}\" must be a number of pixels"))
    };
    let score = match o.get("score") {
        None | Some(Value::Null) => None,
        Some(s) => Some(
            s.as_f64()
                .filter(|s| (0.0..=1.0).contains(s))
                .ok_or("\"score\" must be within 0..1")?,
        ),
    };
    let label = match o.get("label") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) if s.chars().count() <= MAX_LABEL => {
            s.chars().filter(|c| !c.is_control()).collect()
        }
        Some(_) => {
            return Err(format!(
                "\"label\" must be a string of at most {MAX_LABEL} characters"
            ))
        }
    };
    Ok(Detection {
        x: num("x", -MAX_SIDE)?,
        y: num("y", -MAX_SIDE)?,
        w: num("w", 0.0)?,
        h: num("h", 0.0)?,
        score,
        label,
    })
}

/// `json` with every non-ASCII character escaped as `\uXXXX` (surrogate
/// pairs beyond the BMP): still the same JSON, and a valid header value.
fn ascii_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out += &format!("\\u{u:04x}");
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_post_round_trips_in_ascii() {
        let d = Detections::from_json(
            br#"{"sequence": 7, "width": 640, "height": 480,
                "boxes": [{"x": 10, "y": 20.5, "w": 30, "h": 40, "score": 0.5, "label": "visage \u00e9\u0007"}]}"#,
        )
        .unwrap();
        assert_eq!(d.sequence, 7);
        assert_eq!(d.size, Some((640, 480)));
        assert_eq!(d.boxes[0].label, "visage é", "control characters dropped");
        let json = d.to_json();
        assert!(json.is_ascii(), "{json}");
        assert_eq!(Detections::from_json(json.as_bytes()).unwrap(), d);
    }

    #[test]
    fn hostile_posts_are_refused_by_name() {
        let bad = |body: &str, want: &str| {
            let e = Detections::from_json(body.as_bytes()).unwrap_err();
            assert!(e.contains(want), "{body}: {e}");
        };
        bad("[1]", "not a JSON object");
        bad("{\"boxes\": []}", "\"sequence\"");
        bad("{\"sequence\": -1}", "\"sequence\"");
        bad("{\"sequence\": 4294967296}", "\"sequence\"");
        bad("{\"sequence\": 1, \"width\": 10}", "go together");
        bad("{\"sequence\": 1, \"boxes\": {}}", "must be an array");
        bad("{\"sequence\": 1, \"boxes\": [{\"x\": 1}]}", "box 0: \"y\"");
        bad(
            "{\"sequence\": 1, \"boxes\": [{\"x\": 0, \"y\": 0, \"w\": -1, \"h\": 1}]}",
            "\"w\"",
        );
        bad(
            "{\"sequence\": 1, \"boxes\": [{\"x\": 0, \"y\": 0, \"w\": 1, \"h\": 1, \"score\": 2}]}",
            "\"score\"",
        );
        let long = "x".repeat(MAX_LABEL + 1);
        bad(
            &format!("{{\"sequence\": 1, \"boxes\": [{{\"x\": 0, \"y\": 0, \"w\": 1, \"h\": 1, \"label\": \"{long}\"}}]}}"),
            "\"label\"",
        );
        let many = vec!["{\"x\":0,\"y\":0,\"w\":1,\"h\":1}"; MAX_BOXES + 1].join(",");
        bad(
            &format!("{{\"sequence\": 1, \"boxes\": [{many}]}}"),
            "more than the 64",
        );
        bad("{\"sequence\": 1e400}", "not JSON");
    }
}
