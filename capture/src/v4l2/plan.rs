//! How many buffers a V4L2 stream asks for, and why: the driver's minimum
//! (`V4L2_CID_MIN_BUFFERS_FOR_CAPTURE`) plus the frames the caller holds, at
//! least the configured count — a pure function, and the record of what the
//! driver granted.

use std::fmt;

use nix::errno::Errno;

use crate::ArgumentError;

/// The most buffers a stream asks for or takes (the kernel's `VIDEO_MAX_FRAME`).
pub const MAX_BUFFERS: u32 = 64;

/// `V4L2_CID_MIN_BUFFERS_FOR_CAPTURE`: the read-only control by which a driver
/// says how many capture buffers its hardware needs.
pub(crate) const CID_MIN_BUFFERS_FOR_CAPTURE: u32 = 0x0098_0927;

/// What the driver said about its minimum buffer count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverMinimum {
    /// `V4L2_CID_MIN_BUFFERS_FOR_CAPTURE`'s value, as the driver gave it
    /// (values below 1 count as 1).
    Reported(i32),
    /// The driver has no such control (`EINVAL`): 1 is assumed.
    Absent,
    /// Reading the control failed otherwise (its errno): 1 is assumed.
    Unreadable(Errno),
}

impl DriverMinimum {
    /// The result of `VIDIOC_G_CTRL` on the control: `EINVAL` (no such
    /// control) and `ENOTTY` (no controls at all) mean absent.
    pub(crate) fn from_g_ctrl(result: Result<i32, Errno>) -> DriverMinimum {
        match result {
            Ok(v) => DriverMinimum::Reported(v),
            Err(Errno::EINVAL | Errno::ENOTTY) => DriverMinimum::Absent,
            Err(errno) => DriverMinimum::Unreadable(errno),
        }
    }

    /// Buffers the driver needs queued: its value (at least 1), else 1.
    pub fn buffers(self) -> u32 {
        match self {
            DriverMinimum::Reported(v) => u32::try_from(v).unwrap_or(0).max(1),
            DriverMinimum::Absent | DriverMinimum::Unreadable(_) => 1,
        }
    }
}

impl fmt::Display for DriverMinimum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverMinimum::Reported(v) => {
                write!(f, "the driver's minimum {}", self.buffers())?;
                if i64::from(*v) != i64::from(self.buffers()) {
                    write!(f, " (it reported {v})")?;
                }
                Ok(())
            }
            DriverMinimum::Absent => {
                f.write_str("the driver's minimum 1 (no V4L2_CID_MIN_BUFFERS_FOR_CAPTURE)")
            }
            DriverMinimum::Unreadable(errno) => write!(
                f,
                "the driver's minimum 1 (V4L2_CID_MIN_BUFFERS_FOR_CAPTURE unreadable: {errno})"
            ),
        }
    }
}

/// The buffer count of a stream: what it asked `VIDIOC_REQBUFS` for, why,
/// and what the driver granted ([`Stream::buffer_plan`](crate::Stream::buffer_plan)).
///
/// The stream asks for `max(configured, driver minimum + hold)`, at most
/// [`MAX_BUFFERS`], and runs with any grant from `driver minimum + hold` to
/// [`MAX_BUFFERS`]: the caller can then hold `hold` frames while the driver
/// still has its minimum queued.
///
/// ```
/// use zerocam_capture::v4l2::{BufferPlan, DriverMinimum};
///
/// // A driver that needs 3 buffers queued, a caller holding 2 frames at once.
/// let plan = BufferPlan::new(4, 2, DriverMinimum::Reported(3))?;
/// assert_eq!((plan.needed(), plan.requested), (5, 5));
/// assert_eq!(plan.granted(6).map(|p| p.granted), Ok(6)); // REQBUFS may grant more…
/// assert!(plan.granted(4).is_err()); // …or fewer, here too few
/// // No such control: 1 assumed, the configured count wins.
/// let plan = BufferPlan::new(4, 1, DriverMinimum::Absent)?;
/// assert_eq!(plan.requested, 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferPlan {
    /// [`StreamConfig::buffers`](crate::StreamConfig::buffers): the least
    /// asked for.
    pub configured: u32,
    /// [`StreamConfig::hold`](crate::StreamConfig::hold): frames the caller
    /// holds at once.
    pub hold: u32,
    /// What the driver said about its minimum.
    pub driver: DriverMinimum,
    /// The count asked of `VIDIOC_REQBUFS`.
    pub requested: u32,
    /// The count the driver granted (0 until `VIDIOC_REQBUFS` answered).
    pub granted: u32,
}

impl BufferPlan {
    /// The count to ask for: `max(configured, driver minimum + hold)`, at
    /// most [`MAX_BUFFERS`] (saturating, never overflowing).
    ///
    /// # Errors
    /// [`ArgumentError::TooFewBuffers`] for `configured` < 2,
    /// [`ArgumentError::ZeroHold`] for `hold` 0.
    pub fn new(
        configured: u32,
        hold: u32,
        driver: DriverMinimum,
    ) -> Result<BufferPlan, ArgumentError> {
        if configured < 2 {
            return Err(ArgumentError::TooFewBuffers(configured));
        }
        if hold == 0 {
            return Err(ArgumentError::ZeroHold);
        }
        let needed = driver.buffers().saturating_add(hold);
        Ok(BufferPlan {
            configured,
            hold,
            driver,
            requested: configured.max(needed).min(MAX_BUFFERS),
            granted: 0,
        })
    }

    /// Buffers the stream needs: the driver's minimum plus the frames held.
    pub fn needed(&self) -> u32 {
        self.driver.buffers().saturating_add(self.hold)
    }

    /// The plan with the driver's grant, if the stream can run with it.
    ///
    /// # Errors
    /// The plan with the grant recorded, when it is below
    /// [`needed`](Self::needed) or above [`MAX_BUFFERS`].
    pub fn granted(self, granted: u32) -> Result<BufferPlan, BufferPlan> {
        let plan = BufferPlan { granted, ..self };
        if (self.needed()..=MAX_BUFFERS).contains(&granted) {
            Ok(plan)
        } else {
            Err(plan)
        }
    }
}

impl fmt::Display for BufferPlan {
    /// `asked for 5 = max(4 configured, the driver's minimum 3 + 2 held), granted 6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "asked for {} = max({} configured, {} + {} held)",
            self.requested, self.configured, self.driver, self.hold
        )?;
        if self.requested == MAX_BUFFERS {
            write!(f, " capped at {MAX_BUFFERS}")?;
        }
        write!(f, ", granted {}", self.granted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_the_driver_minimum_plus_the_hold_at_least_the_configured() {
        let plan = |configured, hold, driver| BufferPlan::new(configured, hold, driver).unwrap();
        assert_eq!(plan(4, 1, DriverMinimum::Absent).requested, 4);
        assert_eq!(plan(2, 1, DriverMinimum::Absent).requested, 2);
        assert_eq!(plan(2, 3, DriverMinimum::Absent).requested, 4);
        assert_eq!(plan(4, 2, DriverMinimum::Reported(4)).requested, 6);
        assert_eq!(plan(8, 2, DriverMinimum::Reported(4)).requested, 8);
        let unreadable = DriverMinimum::Unreadable(Errno::EIO);
        assert_eq!(plan(2, 2, unreadable).requested, 3);
        assert_eq!(unreadable.buffers(), 1);
    }

    #[test]
    fn hostile_minimums_and_holds_saturate_and_cap() {
        for v in [0, -1, i32::MIN] {
            let d = DriverMinimum::Reported(v);
            assert_eq!(d.buffers(), 1, "{v}");
            assert!(d.to_string().contains(&format!("(it reported {v})")), "{d}");
        }
        let huge = BufferPlan::new(u32::MAX, u32::MAX, DriverMinimum::Reported(i32::MAX)).unwrap();
        assert_eq!((huge.requested, huge.needed()), (MAX_BUFFERS, u32::MAX));
        assert!(huge.to_string().contains("capped at 64"), "{huge}");
        let e = huge.granted(MAX_BUFFERS).unwrap_err();
        assert_eq!(e.granted, MAX_BUFFERS, "the grant is recorded in the error");
    }

    #[test]
    fn grants_above_and_below_the_request() {
        let plan = BufferPlan::new(4, 1, DriverMinimum::Reported(2)).unwrap();
        assert_eq!(plan.granted(3).unwrap().granted, 3, "fewer, still enough");
        assert_eq!(plan.granted(2).unwrap_err().granted, 2, "too few");
        assert_eq!(plan.granted(0).unwrap_err().granted, 0);
        assert_eq!(plan.granted(32).unwrap().granted, 32, "more than asked");
        assert!(
            plan.granted(MAX_BUFFERS + 1).is_err(),
            "more than zerocam takes"
        );
        assert_eq!(
            plan.granted(5).unwrap().to_string(),
            "asked for 4 = max(4 configured, the driver's minimum 2 + 1 held), granted 5"
        );
    }

    #[test]
    fn bad_arguments_are_typed() {
        assert_eq!(
            BufferPlan::new(1, 1, DriverMinimum::Absent),
            Err(ArgumentError::TooFewBuffers(1))
        );
        assert_eq!(
            BufferPlan::new(4, 0, DriverMinimum::Absent),
            Err(ArgumentError::ZeroHold)
        );
    }

    fn driver_minimum() -> impl proptest::strategy::Strategy<Value = DriverMinimum> {
        use proptest::prelude::*;
        prop_oneof![
            any::<i32>().prop_map(DriverMinimum::Reported),
            (-2i32..80).prop_map(DriverMinimum::Reported),
            Just(DriverMinimum::Absent),
            Just(DriverMinimum::Unreadable(Errno::EIO)),
        ]
    }

    proptest::proptest! {
        /// Any configuration, driver minimum and grant: the request is within
        /// 2..=MAX_BUFFERS, covers what is needed unless capped, and a grant
        /// is taken exactly when it holds the minimum plus the hold.
        #[test]
        fn any_plan_and_grant_is_in_bounds(
            configured in 0u32..100,
            hold in 0u32..100,
            driver in driver_minimum(),
            granted in proptest::prop_oneof![0u32..100, proptest::prelude::any::<u32>()],
        ) {
            let Ok(plan) = BufferPlan::new(configured, hold, driver) else {
                proptest::prop_assert!(configured < 2 || hold == 0);
                return Ok(());
            };
            proptest::prop_assert!((2..=MAX_BUFFERS).contains(&plan.requested));
            proptest::prop_assert!(plan.requested >= configured.min(MAX_BUFFERS));
            proptest::prop_assert!(plan.requested >= plan.needed().min(MAX_BUFFERS));
            proptest::prop_assert_eq!(plan.needed(), driver.buffers() + hold);
            let taken = plan.granted(granted);
            proptest::prop_assert_eq!(
                taken.is_ok(),
                granted >= plan.needed() && granted <= MAX_BUFFERS
            );
            let got = taken.unwrap_or_else(|p| p);
            proptest::prop_assert_eq!(got.granted, granted);
            let shown = format!("granted {}", granted);
            proptest::prop_assert!(got.to_string().contains(&shown));
        }
    }

    #[test]
    fn the_control_is_absent_on_einval_and_enotty() {
        assert_eq!(
            DriverMinimum::from_g_ctrl(Err(Errno::EINVAL)),
            DriverMinimum::Absent
        );
        assert_eq!(
            DriverMinimum::from_g_ctrl(Err(Errno::ENOTTY)),
            DriverMinimum::Absent
        );
        assert_eq!(
            DriverMinimum::from_g_ctrl(Err(Errno::EIO)),
            DriverMinimum::Unreadable(Errno::EIO)
        );
        assert_eq!(
            DriverMinimum::from_g_ctrl(Ok(3)),
            DriverMinimum::Reported(3)
        );
    }
}
