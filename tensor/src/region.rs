//! [`Region`], the one rectangle type.

/// A rectangle in pixels of a tensor's leading frame: columns `x..x+width`,
/// rows `y..y+height`. Used by [`Tensor::view`](crate::Tensor::view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Region {
    /// First column.
    pub x: usize,
    /// First row.
    pub y: usize,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl Region {
    /// The region `width`x`height` at (`x`, `y`).
    pub const fn new(x: usize, y: usize, width: usize, height: usize) -> Region {
        Region {
            x,
            y,
            width,
            height,
        }
    }

    /// Whether the region lies inside a `width`x`height` frame (overflow-safe).
    pub fn fits(&self, width: usize, height: usize) -> bool {
        matches!(self.x.checked_add(self.width), Some(r) if r <= width)
            && matches!(self.y.checked_add(self.height), Some(b) if b <= height)
    }
}
