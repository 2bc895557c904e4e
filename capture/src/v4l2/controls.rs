//! Device controls (`VIDIOC_QUERYCTRL`, `G_CTRL`, `S_CTRL`): listing them for
//! `zerocam info`, and setting one by name (vivid's test pattern and fault
//! injection controls among them).

use crate::v4l2::ioctl::{c_str, calls, raw};
use crate::{CaptureError, Device, Result};

/// One control of a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlInfo {
    /// Its id.
    pub id: u32,
    /// Its name as the driver gives it.
    pub name: String,
    /// `enum v4l2_ctrl_type` (1 integer, 2 boolean, 3 menu, 4 button, …).
    pub kind: u32,
    /// Minimum value.
    pub minimum: i32,
    /// Maximum value.
    pub maximum: i32,
    /// Step.
    pub step: i32,
    /// Default value.
    pub default: i32,
}

/// `V4L2_CTRL_TYPE_CTRL_CLASS`: class headers, not controls.
const CTRL_TYPE_CLASS: u32 = 6;
/// `V4L2_CTRL_TYPE_MENU`.
const CTRL_TYPE_MENU: u32 = 3;
/// `V4L2_CTRL_TYPE_INTEGER_MENU`: items are 64-bit values.
const CTRL_TYPE_INTEGER_MENU: u32 = 9;

impl Device {
    /// Every enabled control of the device.
    pub fn controls(&self) -> Result<Vec<ControlInfo>> {
        let mut out = Vec::new();
        let mut id = 0;
        while let Some(q) =
            calls::queryctrl_next(self.fd(), id).map_err(self.ioctl_error("VIDIOC_QUERYCTRL"))?
        {
            if q.id <= id && id != 0 {
                break; // a driver looping on one id
            }
            id = q.id;
            if q.flags & raw::CTRL_FLAG_DISABLED != 0 || q.type_ == CTRL_TYPE_CLASS {
                continue;
            }
            out.push(ControlInfo {
                id: q.id,
                name: c_str(&q.name),
                kind: q.type_,
                minimum: q.minimum,
                maximum: q.maximum,
                step: q.step,
                default: q.default_value,
            });
        }
        Ok(out)
    }

    /// The control named `name` (case-insensitive).
    ///
    /// # Errors
    /// [`CaptureError::NoSuchControl`].
    pub fn control(&self, name: &str) -> Result<ControlInfo> {
        self.controls()?
            .into_iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| CaptureError::NoSuchControl {
                path: self.path().to_path_buf(),
                name: name.to_owned(),
            })
    }

    /// The items of menu control `control`: `(index, name)`; for an integer
    /// menu the name is the item's value. Empty for other control types.
    pub fn menu(&self, control: &ControlInfo) -> Result<Vec<(i32, String)>> {
        if control.kind != CTRL_TYPE_MENU && control.kind != CTRL_TYPE_INTEGER_MENU {
            return Ok(Vec::new());
        }
        let mut items = Vec::new();
        for index in control.minimum.max(0)..=control.maximum.max(0) {
            let found = calls::querymenu(self.fd(), control.id, index as u32)
                .map_err(self.ioctl_error("VIDIOC_QUERYMENU"))?;
            match found {
                Some(name) if control.kind == CTRL_TYPE_MENU => items.push((index, c_str(&name))),
                Some(value) => {
                    let mut v = [0u8; 8];
                    v.copy_from_slice(&value[..8]);
                    items.push((index, i64::from_ne_bytes(v).to_string()));
                }
                None => continue, // an index the menu skips
            }
        }
        Ok(items)
    }

    /// Sets menu control `name` to the item called `item` (case-insensitive).
    ///
    /// # Errors
    /// [`CaptureError::NoSuchControl`] naming the control and item when either
    /// is missing.
    pub fn set_menu(&self, name: &str, item: &str) -> Result<()> {
        let c = self.control(name)?;
        let (index, _) = self
            .menu(&c)?
            .into_iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(item))
            .ok_or_else(|| CaptureError::NoSuchControl {
                path: self.path().to_path_buf(),
                name: format!("{name} = {item}"),
            })?;
        self.set_control(c.id, index)
    }

    /// Sets control `id` to `value` (any value presses a button control).
    pub fn set_control(&self, id: u32, value: i32) -> Result<()> {
        calls::s_ctrl(self.fd(), id, value).map_err(self.ioctl_error("VIDIOC_S_CTRL"))
    }

    /// The value of control `id`.
    pub fn get_control(&self, id: u32) -> Result<i32> {
        calls::g_ctrl(self.fd(), id).map_err(self.ioctl_error("VIDIOC_G_CTRL"))
    }
}
