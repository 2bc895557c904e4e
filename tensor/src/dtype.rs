//! Element types: the [`DType`] tag and the [`Element`] trait behind `Tensor<T>`.

use std::fmt;

use half::f16;

/// The element type of a tensor, as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// `u8`
    U8,
    /// `i8`
    I8,
    /// `u16`
    U16,
    /// `i16`
    I16,
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// IEEE 754 half precision ([`half::f16`])
    F16,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl DType {
    /// Bytes per element.
    ///
    /// ```
    /// assert_eq!(zerocam_tensor::DType::F16.size(), 2);
    /// ```
    pub const fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// The numpy-style name (`"uint8"`, `"float16"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::U16 => "uint16",
            DType::I16 => "int16",
            DType::U32 => "uint32",
            DType::I32 => "int32",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Every element type, in declaration order.
    pub const ALL: [DType; 9] = [
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::F16,
        DType::F32,
        DType::F64,
    ];

    /// Parses a numpy-style name, as [`DType::name`] writes it.
    ///
    /// ```
    /// use zerocam_tensor::DType;
    /// assert_eq!(DType::from_name("float32"), Some(DType::F32));
    /// assert_eq!(DType::from_name("complex64"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A type a [`Tensor`](crate::Tensor) can hold: plain old data for which every
/// bit pattern is a valid value, so memory shared with a device or another
/// process can be read as it is. Sealed: implemented for the [`DType`] types only.
pub trait Element:
    sealed::Sealed + Copy + Default + Send + Sync + fmt::Debug + PartialEq + 'static
{
    /// The matching [`DType`].
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )*};
}

element!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
         f16 => F16, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_rust_types() {
        assert_eq!(<f16 as Element>::DTYPE.size(), std::mem::size_of::<f16>());
        assert_eq!(<f64 as Element>::DTYPE.size(), std::mem::size_of::<f64>());
        assert_eq!(<i16 as Element>::DTYPE.size(), std::mem::size_of::<i16>());
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
    }
}
