use std::borrow::Cow;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::os::raw::c_char;
use std::slice;

use crate::error::{Error, Result, Status};
use crate::sys;

/// Element type of a tensor, mirroring `onnxstream_dtype_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Float32,
    /// IEEE half precision, stored as `u16` bit patterns.
    Float16,
    Int64,
    UInt8,
    Int8,
    Int32,
    /// One byte per element, 0 or 1.
    Bool,
    /// Since 0.13.
    Float64,
    /// Since 0.13.
    Int16,
    /// Since 0.13.
    UInt16,
    /// Since 0.13.
    UInt32,
    /// Since 0.13.
    UInt64,
    /// Since 0.13: the top 16 bits of an f32, stored as `u16` bit patterns.
    BFloat16,
    /// Since 0.14: the float8 types, stored as `u8` bit patterns.
    Float8E4M3FN,
    /// Since 0.14.
    Float8E4M3FNUZ,
    /// Since 0.14.
    Float8E5M2,
    /// Since 0.14.
    Float8E5M2FNUZ,
    /// Since 0.14: one value per byte, stored as `i8`.
    Int4,
    /// Since 0.14: one value per byte, stored as `u8`.
    UInt4,
    /// A value this version of the crate does not know.
    Unknown(i32),
}

impl DType {
    pub fn from_code(code: i32) -> DType {
        match code {
            sys::ONNXSTREAM_DTYPE_FLOAT32 => DType::Float32,
            sys::ONNXSTREAM_DTYPE_FLOAT16 => DType::Float16,
            sys::ONNXSTREAM_DTYPE_INT64 => DType::Int64,
            sys::ONNXSTREAM_DTYPE_UINT8 => DType::UInt8,
            sys::ONNXSTREAM_DTYPE_INT8 => DType::Int8,
            sys::ONNXSTREAM_DTYPE_INT32 => DType::Int32,
            sys::ONNXSTREAM_DTYPE_BOOL => DType::Bool,
            sys::ONNXSTREAM_DTYPE_FLOAT64 => DType::Float64,
            sys::ONNXSTREAM_DTYPE_INT16 => DType::Int16,
            sys::ONNXSTREAM_DTYPE_UINT16 => DType::UInt16,
            sys::ONNXSTREAM_DTYPE_UINT32 => DType::UInt32,
            sys::ONNXSTREAM_DTYPE_UINT64 => DType::UInt64,
            sys::ONNXSTREAM_DTYPE_BFLOAT16 => DType::BFloat16,
            sys::ONNXSTREAM_DTYPE_FLOAT8E4M3FN => DType::Float8E4M3FN,
            sys::ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ => DType::Float8E4M3FNUZ,
            sys::ONNXSTREAM_DTYPE_FLOAT8E5M2 => DType::Float8E5M2,
            sys::ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ => DType::Float8E5M2FNUZ,
            sys::ONNXSTREAM_DTYPE_INT4 => DType::Int4,
            sys::ONNXSTREAM_DTYPE_UINT4 => DType::UInt4,
            other => DType::Unknown(other),
        }
    }

    pub fn code(self) -> i32 {
        match self {
            DType::Float32 => sys::ONNXSTREAM_DTYPE_FLOAT32,
            DType::Float16 => sys::ONNXSTREAM_DTYPE_FLOAT16,
            DType::Int64 => sys::ONNXSTREAM_DTYPE_INT64,
            DType::UInt8 => sys::ONNXSTREAM_DTYPE_UINT8,
            DType::Int8 => sys::ONNXSTREAM_DTYPE_INT8,
            DType::Int32 => sys::ONNXSTREAM_DTYPE_INT32,
            DType::Bool => sys::ONNXSTREAM_DTYPE_BOOL,
            DType::Float64 => sys::ONNXSTREAM_DTYPE_FLOAT64,
            DType::Int16 => sys::ONNXSTREAM_DTYPE_INT16,
            DType::UInt16 => sys::ONNXSTREAM_DTYPE_UINT16,
            DType::UInt32 => sys::ONNXSTREAM_DTYPE_UINT32,
            DType::UInt64 => sys::ONNXSTREAM_DTYPE_UINT64,
            DType::BFloat16 => sys::ONNXSTREAM_DTYPE_BFLOAT16,
            DType::Float8E4M3FN => sys::ONNXSTREAM_DTYPE_FLOAT8E4M3FN,
            DType::Float8E4M3FNUZ => sys::ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ,
            DType::Float8E5M2 => sys::ONNXSTREAM_DTYPE_FLOAT8E5M2,
            DType::Float8E5M2FNUZ => sys::ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ,
            DType::Int4 => sys::ONNXSTREAM_DTYPE_INT4,
            DType::UInt4 => sys::ONNXSTREAM_DTYPE_UINT4,
            DType::Unknown(code) => code,
        }
    }

    /// Bytes per element (0 for an unknown dtype).
    pub fn size(self) -> usize {
        // Safety: a pure function of its argument.
        unsafe { sys::onnxstream_dtype_size(self.code()) }
    }

    /// The name used in model.txt ("float32"), or "unknown".
    pub fn name(self) -> &'static str {
        // Safety: returns a static NUL-terminated string.
        unsafe { static_str(sys::onnxstream_dtype_name(self.code())) }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose slices can be pushed as, or viewed from, tensor data of one dtype.
/// Implemented for `f32`, `f64`, `i64`, `i32`, `i16`, `i8`, `u64`, `u32`, `u16` and `u8` (float16 and bool go
/// through
/// [`Model::push_bytes`](crate::Model::push_bytes) and [`TensorView::bytes`]).
pub trait Element: sealed::Sealed + Copy + 'static {
    const DTYPE: DType;
}

macro_rules! element {
    ($t:ty, $d:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
        }
    };
}
element!(f32, DType::Float32);
element!(i64, DType::Int64);
element!(i32, DType::Int32);
element!(u8, DType::UInt8);
element!(i8, DType::Int8);
element!(f64, DType::Float64);
element!(i16, DType::Int16);
element!(u16, DType::UInt16);
element!(u32, DType::UInt32);
element!(u64, DType::UInt64);

/// Reinterprets a slice of plain numbers as bytes.
pub(crate) fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    // Safety: every Element is a plain number type without padding.
    unsafe { slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) }
}

/// Converts IEEE half-precision bits to f32 (exact; handles subnormals, infinities and NaN).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise the mantissa.
            let shift = m.leading_zeros() - 21;
            sign | ((113 - shift) << 23) | (((m << shift) & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

pub(crate) unsafe fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("")
}

pub(crate) unsafe fn lossy<'a>(p: *const c_char) -> Cow<'a, str> {
    if p.is_null() {
        Cow::Borrowed("")
    } else {
        CStr::from_ptr(p).to_string_lossy()
    }
}

pub(crate) unsafe fn raw_slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if n == 0 || p.is_null() {
        &[]
    } else {
        slice::from_raw_parts(p, n)
    }
}

/// A read-only view of an output tensor. It borrows the [`Model`](crate::Model), so it cannot outlive
/// the next `run`, `load` or the model itself (all of which need `&mut Model`).
#[derive(Clone, Debug)]
pub struct TensorView<'a> {
    name: Cow<'a, str>,
    dtype: DType,
    shape: &'a [i64],
    data: &'a [u8],
    _model: PhantomData<&'a crate::Model>,
}

impl<'a> TensorView<'a> {
    /// Safety: the view's pointers must stay valid for 'a.
    pub(crate) unsafe fn from_raw(v: &sys::onnxstream_tensor_view_t) -> TensorView<'a> {
        TensorView {
            name: lossy(v.name),
            dtype: DType::from_code(v.dtype),
            shape: raw_slice(v.shape, v.rank),
            data: raw_slice(v.data as *const u8, v.byte_size),
            _model: PhantomData,
        }
    }

    /// The tensor's name, in model.txt's escaped spelling.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &'a [i64] {
        self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product::<i64>().max(0) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw little-endian bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The data as a typed slice; fails when `T` does not match the tensor's dtype.
    pub fn data<T: Element>(&self) -> Result<&'a [T]> {
        if self.dtype != T::DTYPE {
            return Err(Error::new(
                Status::InvalidArgument,
                format!("output '{}' is {}, not {}", self.name, self.dtype, T::DTYPE),
            ));
        }
        if self.data.is_empty() {
            return Ok(&[]);
        }
        if self.data.as_ptr() as usize % align_of::<T>() != 0 || self.data.len() % size_of::<T>() != 0 {
            return Err(Error::new(
                Status::Internal,
                format!("output '{}' data is not aligned/sized for {}", self.name, T::DTYPE),
            ));
        }
        // Safety: alignment and size checked; the bytes are initialised numbers of type T.
        Ok(unsafe { slice::from_raw_parts(self.data.as_ptr() as *const T, self.data.len() / size_of::<T>()) })
    }

    /// Copies float32 or float16 data into a `Vec<f32>`.
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        match self.dtype {
            DType::Float32 => {
                Ok(self.data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
            }
            DType::Float16 => {
                Ok(self.data.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))).collect())
            }
            other => Err(Error::new(
                Status::InvalidArgument,
                format!("output '{}' is {}, not a floating-point tensor", self.name, other),
            )),
        }
    }
}

/// A graph input as model.txt declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputInfo {
    /// Escaped model.txt spelling.
    pub name: String,
    pub shape: Vec<i64>,
    /// The dtype of the last pushed tensor (float32 before one is pushed: model.txt does not record it).
    pub dtype: DType,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn dtype_roundtrip_and_names() {
        for d in [
            DType::Float32,
            DType::Float16,
            DType::Int64,
            DType::UInt8,
            DType::Int8,
            DType::Int32,
            DType::Bool,
            DType::Float64,
            DType::Int16,
            DType::UInt16,
            DType::UInt32,
            DType::UInt64,
            DType::BFloat16,
            DType::Float8E4M3FN,
            DType::Float8E4M3FNUZ,
            DType::Float8E5M2,
            DType::Float8E5M2FNUZ,
            DType::Int4,
            DType::UInt4,
        ] {
            assert_eq!(DType::from_code(d.code()), d);
            assert_ne!(d.name(), "unknown");
        }
        assert_eq!(DType::Float32.size(), 4);
        assert_eq!(DType::Float16.name(), "float16");
        assert_eq!(DType::Float64.size(), 8);
        assert_eq!(DType::UInt16.name(), "uint16");
        assert_eq!(DType::from_code(99), DType::Unknown(99));
        assert_eq!(DType::Unknown(99).size(), 0);
    }
}
