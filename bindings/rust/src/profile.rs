//! Per-op profiles of runs (models created with [`ModelOptions::profile`](crate::ModelOptions::profile))
//! and the machine's roofline.

use std::mem::size_of;

use crate::error::{check, Result};
use crate::sys;

/// One op of a profiled run: [`Model::profile`](crate::Model::profile) returns one per op of the last
/// successful run, in execution order. Everything is copied out of the library, so it outlives later
/// runs and the model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct OpProfile {
    /// Position of the op in the run (0-based).
    pub op_index: usize,
    /// Its model.txt line (1-based).
    pub line: usize,
    /// The op's name and type as written in model.txt.
    pub op_name: String,
    pub op_type: String,
    /// Logical dtypes and shapes of its inputs, e.g. `"float32[1,3,640,640], w:float16[16,3,3,3]"`
    /// (`w:` marks a weight, `-` an absent optional input).
    pub inputs: String,
    /// The same for its outputs.
    pub outputs: String,
    /// Start time from the start of the run, in nanoseconds.
    pub start_ns: u64,
    /// Time spent in the op, its weight fetches and kernel preparation included.
    pub duration_ns: u64,
    /// Time spent fetching its weights and reading streamed weight rows (on the run thread).
    pub weight_wait_ns: u64,
    /// XNNPACK operator creation (weight packing) and setup (indirection buffers).
    pub kernel_prepare_ns: u64,
    /// Floating-point operations, 2 per multiply-add of matrix ops (Conv, ConvTranspose, MatMul, Gemm,
    /// Einsum, fused attention and feed-forward); 0 for the others.
    pub flops: u64,
    /// Stored bytes of its weights.
    pub weight_bytes: u64,
    /// Bytes of its activation inputs and outputs.
    pub activation_bytes: u64,
    /// Tracked tensor bytes alive after it.
    pub memory_bytes: u64,
}

/// How [`Model::render_profile`](crate::Model::render_profile) renders a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProfileFormat {
    /// Chrome trace events (JSON): loads in Perfetto and chrome://tracing.
    TraceJson,
    /// A text table per op type, sorted by time.
    Summary,
}

impl ProfileFormat {
    pub(crate) fn code(self) -> sys::onnxstream_profile_format_t {
        match self {
            ProfileFormat::TraceJson => sys::ONNXSTREAM_PROFILE_TRACE_JSON,
            ProfileFormat::Summary => sys::ONNXSTREAM_PROFILE_SUMMARY,
        }
    }
}

/// A machine's measured ceilings; passed to [`Model::render_profile`](crate::Model::render_profile),
/// they add the summary's "% peak" column.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Roofline {
    /// float32 matrix multiplication rate (XNNPACK's GEMM), in FLOP/s.
    pub flops_per_s: f64,
    /// Memory bandwidth (bytes read + written by a copy much bigger than the caches), in bytes/s.
    pub bytes_per_s: f64,
}

impl Roofline {
    pub(crate) fn to_raw(self) -> sys::onnxstream_roofline_t {
        sys::onnxstream_roofline_t {
            struct_size: size_of::<sys::onnxstream_roofline_t>() as u32,
            flops_per_s: self.flops_per_s,
            bytes_per_s: self.bytes_per_s,
        }
    }
}

/// Measures this machine's roofline with `threads` worker threads (0 = one per core): XNNPACK's float32
/// GEMM on a cache-friendly problem and a copy much bigger than the caches. Takes about a second.
/// More threads than the library accepts (1024) fail with `InvalidArgument`.
pub fn measure_roofline(threads: usize) -> Result<Roofline> {
    let mut raw = Roofline::default().to_raw();
    let threads = i32::try_from(threads).unwrap_or(i32::MAX);
    // Safety: a valid struct with struct_size set; on failure the message is in the thread's last error.
    check(unsafe { sys::onnxstream_measure_roofline(threads, &mut raw) }, std::ptr::null())?;
    Ok(Roofline { flops_per_s: raw.flops_per_s, bytes_per_s: raw.bytes_per_s })
}
