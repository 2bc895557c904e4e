//! [`Device`]: an open V4L2 capture node — its capabilities, formats, sizes,
//! frame intervals, the format negotiation and the frame rate.

use std::fmt;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::sys::stat::Mode;

use crate::v4l2::ioctl::error::QuerycapError;
use crate::v4l2::ioctl::{c_str, calls, raw, IoctlError};
use zerocam_tensor::ColorSpec;

use crate::v4l2::FormatReply;
use crate::{CaptureError, CaptureFormat, Colorimetry, FourCc, Result, StreamFormat};

/// Which buffer API the device speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferApi {
    /// `V4L2_BUF_TYPE_VIDEO_CAPTURE`: one memory plane per buffer.
    SinglePlanar,
    /// `V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE`: one or more memory planes per
    /// buffer (the i.MX8M Plus ISI's API).
    MultiPlanar,
}

impl BufferApi {
    pub(crate) fn buf_type(self) -> u32 {
        match self {
            BufferApi::SinglePlanar => raw::BUF_TYPE_VIDEO_CAPTURE,
            BufferApi::MultiPlanar => raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE,
        }
    }
}

impl fmt::Display for BufferApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BufferApi::SinglePlanar => "single-planar",
            BufferApi::MultiPlanar => "multi-planar",
        })
    }
}

/// What `VIDIOC_QUERYCAP` says about a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Driver name (`vivid`, `mxc-isi`, `uvcvideo`).
    pub driver: String,
    /// Card name.
    pub card: String,
    /// Bus information.
    pub bus_info: String,
    /// The device node's capabilities (`device_caps`).
    pub caps: u32,
    /// The buffer API used for capture.
    pub api: BufferApi,
}

/// A pixel format a device offers (`VIDIOC_ENUM_FMT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatDesc {
    /// Its code.
    pub fourcc: FourCc,
    /// The driver's description.
    pub description: String,
    /// zerocam's description of it, when zerocam can capture it.
    pub capture: Option<CaptureFormat>,
    /// Whether the driver converts it to a requested Y'CbCr encoding and
    /// quantization (`V4L2_FMT_FLAG_CSC_YCBCR_ENC` and `_QUANTIZATION`):
    /// what [`Device::set_format_color`] needs.
    pub sets_color: bool,
}

/// Frame sizes of a format (`VIDIOC_ENUM_FRAMESIZES`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameSizes {
    /// A list of sizes.
    Discrete(Vec<(u32, u32)>),
    /// Any size in a range, in steps (continuous when the steps are 1).
    Stepwise {
        /// Smallest width.
        min_width: u32,
        /// Largest width.
        max_width: u32,
        /// Width step.
        step_width: u32,
        /// Smallest height.
        min_height: u32,
        /// Largest height.
        max_height: u32,
        /// Height step.
        step_height: u32,
    },
}

impl fmt::Display for FrameSizes {
    /// `320x180, 640x480` for a list; `16..1920 step 2 x 16..1080 step 2` for a range.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameSizes::Discrete(sizes) => {
                let list: Vec<String> = sizes.iter().map(|(w, h)| format!("{w}x{h}")).collect();
                f.write_str(&list.join(", "))
            }
            FrameSizes::Stepwise {
                min_width,
                max_width,
                step_width,
                min_height,
                max_height,
                step_height,
            } => write!(
                f,
                "{min_width}..{max_width} step {step_width} x {min_height}..{max_height} step {step_height}"
            ),
        }
    }
}

/// A frame interval in seconds, `numerator / denominator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    /// Numerator.
    pub numerator: u32,
    /// Denominator.
    pub denominator: u32,
}

impl From<raw::Fract> for Interval {
    fn from(f: raw::Fract) -> Interval {
        Interval {
            numerator: f.numerator,
            denominator: f.denominator,
        }
    }
}

impl Interval {
    /// Frames per second (0 for a zero interval).
    pub fn fps(self) -> f64 {
        if self.numerator == 0 {
            0.0
        } else {
            f64::from(self.denominator) / f64::from(self.numerator)
        }
    }
}

/// The `/dev/video*` nodes that open as streaming capture devices, in node
/// number order (metadata and output nodes are left out).
pub fn capture_devices() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("/dev")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("video"))
                })
                .collect()
        })
        .unwrap_or_default();
    paths.sort_by_key(|p| {
        let digits: String = p
            .to_string_lossy()
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse::<u32>().unwrap_or(u32::MAX)
    });
    paths.retain(|p| Device::open(p).is_ok());
    paths
}

/// An open V4L2 video capture device.
#[derive(Debug)]
pub struct Device {
    path: PathBuf,
    fd: OwnedFd,
    info: DeviceInfo,
}

impl Device {
    /// Opens `path` (non-blocking) and checks it is a streaming capture device.
    ///
    /// # Errors
    /// [`CaptureError::NoDevice`], [`CaptureError::Open`],
    /// [`CaptureError::NotV4l2`], [`CaptureError::NotCapture`].
    pub fn open(path: impl AsRef<Path>) -> Result<Device> {
        let path = path.as_ref().to_path_buf();
        let flags = OFlag::O_RDWR | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = open(&path, flags, Mode::empty()).map_err(|errno| match errno {
            Errno::ENOENT => CaptureError::NoDevice { path: path.clone() },
            errno => CaptureError::Open {
                path: path.clone(),
                errno,
            },
        })?;
        let cap = calls::querycap(fd.as_fd()).map_err(|e| match e {
            QuerycapError::NotV4l2(errno) => CaptureError::NotV4l2 {
                path: path.clone(),
                errno,
            },
            QuerycapError::Other(errno) => CaptureError::Open {
                path: path.clone(),
                errno,
            },
        })?;
        let caps = if cap.capabilities & raw::CAP_DEVICE_CAPS != 0 {
            cap.device_caps
        } else {
            cap.capabilities
        };
        let card = c_str(&cap.card);
        let api = if caps & raw::CAP_VIDEO_CAPTURE_MPLANE != 0 {
            BufferApi::MultiPlanar
        } else if caps & raw::CAP_VIDEO_CAPTURE != 0 {
            BufferApi::SinglePlanar
        } else {
            return Err(CaptureError::NotCapture { path, card, caps });
        };
        if caps & raw::CAP_STREAMING == 0 {
            return Err(CaptureError::NotCapture { path, card, caps });
        }
        let info = DeviceInfo {
            driver: c_str(&cap.driver),
            card,
            bus_info: c_str(&cap.bus_info),
            caps,
            api,
        };
        Ok(Device { path, fd, info })
    }

    /// The device node's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the driver said about the device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub(crate) fn ioctl_error(
        &self,
        ioctl: &'static str,
    ) -> impl Fn(IoctlError) -> CaptureError + '_ {
        move |e| e.into_capture(&self.path, ioctl)
    }

    /// The pixel formats the device offers.
    pub fn formats(&self) -> Result<Vec<FormatDesc>> {
        let csc = raw::FMT_FLAG_CSC_YCBCR_ENC | raw::FMT_FLAG_CSC_QUANTIZATION;
        let mut out = Vec::new();
        while let Some(d) = calls::enum_fmt(self.fd(), self.info.api.buf_type(), out.len() as u32)
            .map_err(self.ioctl_error("VIDIOC_ENUM_FMT"))?
        {
            let fourcc = FourCc::from_u32(d.pixelformat);
            out.push(FormatDesc {
                fourcc,
                description: c_str(&d.description),
                capture: CaptureFormat::from_fourcc(fourcc),
                sets_color: d.flags & csc == csc,
            });
        }
        Ok(out)
    }

    /// The frame sizes of `fourcc`.
    pub fn frame_sizes(&self, fourcc: FourCc) -> Result<FrameSizes> {
        let mut discrete = Vec::new();
        while let Some(s) =
            calls::enum_framesizes(self.fd(), fourcc.to_u32(), discrete.len() as u32)
                .map_err(self.ioctl_error("VIDIOC_ENUM_FRAMESIZES"))?
        {
            if s.type_ == raw::FRM_TYPE_DISCRETE {
                discrete.push((s.size[0], s.size[1]));
                continue;
            }
            let [min_width, max_width, step_width, min_height, max_height, step_height] = s.size;
            return Ok(FrameSizes::Stepwise {
                min_width,
                max_width,
                step_width,
                min_height,
                max_height,
                step_height,
            });
        }
        Ok(FrameSizes::Discrete(discrete))
    }

    /// The frame intervals of `fourcc` at `width`x`height`: discrete ones, or
    /// the minimum and maximum of a range.
    pub fn frame_intervals(
        &self,
        fourcc: FourCc,
        width: u32,
        height: u32,
    ) -> Result<Vec<Interval>> {
        let mut out = Vec::new();
        let (fd, fourcc) = (self.fd(), fourcc.to_u32());
        while let Some(i) = calls::enum_frameintervals(fd, fourcc, width, height, out.len() as u32)
            .map_err(self.ioctl_error("VIDIOC_ENUM_FRAMEINTERVALS"))?
        {
            if i.type_ != raw::FRM_TYPE_DISCRETE {
                out.extend(i.ival[..2].iter().map(|&f| Interval::from(f)));
                break;
            }
            out.push(i.ival[0].into());
        }
        Ok(out)
    }

    /// The current format (`VIDIOC_G_FMT`), if zerocam can capture it and
    /// its planes fit their buffers ([`FormatReply::stream_format`]).
    pub fn format(&self) -> Result<StreamFormat> {
        self.current_format()?.stream_format(&self.path)
    }

    /// Sets `format` at `width`x`height`, honouring the driver's strides and sizes.
    ///
    /// # Errors
    /// [`CaptureError::UnsupportedFormat`] when the device does not offer the
    /// format; [`CaptureError::UnsupportedSize`] when the driver picks another size;
    /// [`CaptureError::BadFormat`] when its reply does not describe whole frames
    /// fitting their buffers (see [`FormatReply::stream_format_for`]).
    pub fn set_format(
        &mut self,
        format: CaptureFormat,
        width: u32,
        height: u32,
    ) -> Result<StreamFormat> {
        self.set_format_as(format, width, height, None)
    }

    /// Sets `format` at `width`x`height` as [`set_format`](Self::set_format)
    /// does, asking the driver to convert its frames to `color`
    /// (`V4L2_PIX_FMT_FLAG_SET_CSC` with the Y'CbCr encoding and quantization
    /// of `color`; the colorspace stays the driver's). Capture drivers choose
    /// their colour themselves unless they offer this
    /// ([`FormatDesc::sets_color`]; vivid does, for its YCbCr formats). A
    /// driver may keep the colour for later `set_format` calls (vivid does,
    /// until its colour controls are set).
    ///
    /// # Errors
    /// Those of [`set_format`](Self::set_format), and
    /// [`CaptureError::UnsupportedColor`] when the driver does not offer the
    /// conversion for the format, or sets another colour (the format is then
    /// set, in the driver's colour: [`Device::format`] says which).
    pub fn set_format_color(
        &mut self,
        format: CaptureFormat,
        width: u32,
        height: u32,
        color: ColorSpec,
    ) -> Result<StreamFormat> {
        let path = self.path.clone();
        let unsupported = move |reason: String| CaptureError::UnsupportedColor {
            path: path.clone(),
            fourcc: format.fourcc,
            asked: color,
            reason,
        };
        let offered = self.formats()?;
        if let Some(d) = offered.iter().find(|d| d.fourcc == format.fourcc) {
            if !d.sets_color {
                return Err(unsupported(
                    "the driver converts it to no requested Y'CbCr encoding and quantization \
                     (V4L2_FMT_FLAG_CSC_YCBCR_ENC, V4L2_FMT_FLAG_CSC_QUANTIZATION)"
                        .into(),
                ));
            }
        }
        let got = self.set_format_as(format, width, height, Some(color))?;
        if got.color != color {
            return Err(unsupported(format!("the driver set {}", got.color)));
        }
        Ok(got)
    }

    /// `VIDIOC_S_FMT` of `format`, asking for `color` when given.
    fn set_format_as(
        &mut self,
        format: CaptureFormat,
        width: u32,
        height: u32,
        color: Option<ColorSpec>,
    ) -> Result<StreamFormat> {
        let offered = self.formats()?;
        if !offered.iter().any(|d| d.fourcc == format.fourcc) {
            return Err(CaptureError::UnsupportedFormat {
                path: self.path.clone(),
                fourcc: format.fourcc,
                offered: offered
                    .iter()
                    .map(|d| d.fourcc.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        // A request names the driver's colorspace: the V4L2 core resets the
        // encoding and quantization of a request whose colorspace is 0.
        let csc = match color {
            Some(color) => {
                let current = self.current_format()?.colorimetry.colorspace;
                Some(Colorimetry::request(color, current))
            }
            None => None,
        };
        let c = csc.unwrap_or_default();
        // The extended fields of a single-planar format count only with the magic.
        let (flags, priv_) = match csc {
            Some(_) => (raw::PIX_FMT_FLAG_SET_CSC, raw::PIX_FMT_PRIV_MAGIC),
            None => (0, 0),
        };
        let mut f = raw::Format::new(self.info.api.buf_type());
        match self.info.api {
            BufferApi::SinglePlanar => {
                f.fmt.pix = raw::PixFormat {
                    width,
                    height,
                    pixelformat: format.fourcc.to_u32(),
                    field: raw::FIELD_NONE,
                    colorspace: c.colorspace,
                    priv_,
                    flags,
                    ycbcr_enc: c.ycbcr_enc,
                    quantization: c.quantization,
                    ..Default::default()
                }
            }
            BufferApi::MultiPlanar => {
                // Encoding and quantization are 0..=2: they fit the u8 fields.
                f.fmt.pix_mp = raw::PixFormatMplane {
                    width,
                    height,
                    pixelformat: format.fourcc.to_u32(),
                    field: raw::FIELD_NONE,
                    colorspace: c.colorspace,
                    num_planes: format.memory_planes as u8,
                    flags: flags as u8,
                    ycbcr_enc: c.ycbcr_enc as u8,
                    quantization: c.quantization as u8,
                    ..Default::default()
                }
            }
        }
        let set = calls::s_fmt(self.fd(), f).map_err(self.ioctl_error("VIDIOC_S_FMT"))?;
        self.reply(&set)?
            .stream_format_for(&self.path, format, width, height)
    }

    /// `VIDIOC_G_FMT` as plain values.
    fn current_format(&self) -> Result<FormatReply> {
        let f = calls::g_fmt(self.fd(), self.info.api.buf_type())
            .map_err(self.ioctl_error("VIDIOC_G_FMT"))?;
        self.reply(&f)
    }

    /// The reply of `VIDIOC_S_FMT`/`G_FMT` as plain values.
    fn reply(&self, f: &raw::Format) -> Result<FormatReply> {
        FormatReply::from_raw(f).ok_or_else(|| CaptureError::Ioctl {
            path: self.path.clone(),
            ioctl: "VIDIOC_G_FMT (not a capture buffer type)",
            errno: Errno::EINVAL,
        })
    }

    /// Asks for `fps` frames per second; returns the rate the driver set.
    pub fn set_frame_rate(&mut self, fps: f64) -> Result<f64> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(crate::ArgumentError::BadFrameRate(fps).into());
        }
        let denominator = (fps * 1000.0).round();
        if !(1.0..=f64::from(u32::MAX)).contains(&denominator) {
            return Err(crate::ArgumentError::BadFrameRate(fps).into());
        }
        let interval = raw::Fract {
            numerator: 1000,
            denominator: denominator as u32,
        };
        let got = calls::s_parm_interval(self.fd(), self.info.api.buf_type(), interval)
            .map_err(self.ioctl_error("VIDIOC_S_PARM"))?;
        Ok(Interval::from(got).fps())
    }

    /// The current frame rate.
    pub fn frame_rate(&self) -> Result<f64> {
        let p = calls::g_parm(self.fd(), self.info.api.buf_type())
            .map_err(self.ioctl_error("VIDIOC_G_PARM"))?;
        Ok(Interval::from(p.capture().timeperframe).fps())
    }
}
