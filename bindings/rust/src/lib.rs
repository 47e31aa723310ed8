//! Safe Rust bindings to libonnxstream, which runs OnnxStream `model.txt` models op by op, fetching
//! each op's weights just before it runs, so peak memory stays near one op's weights plus live
//! activations.
//!
//! ```no_run
//! use onnxstream::{Model, ModelOptions, WeightRequest};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut model = Model::new(&ModelOptions::new().threads(2))?;
//! model.load("models/yolov8n")?;
//! // Serve weights from anywhere: here, straight from disk through a Rust closure.
//! model.set_weights_provider(onnxstream::provider_fn(|req: &WeightRequest, dst: &mut [u8]| {
//!     let bytes = std::fs::read(format!("models/yolov8n/{}", req.file()))?;
//!     dst.copy_from_slice(&bytes);
//!     Ok(())
//! }))?;
//! model.push("images", &[1, 3, 640, 640], &vec![0.5f32; 3 * 640 * 640])?;
//! model.run()?;
//! let out = model.output_by_name("output0")?;
//! println!("{:?} {}", out.shape(), out.data::<f32>()?[0]);
//! # Ok(()) }
//! ```
//!
//! The crate has no dependencies; `build.rs` finds the C library with `pkg-config` (or
//! `ONNXSTREAM_LIB_DIR`).

mod error;
mod model;
mod options;
mod pack;
mod profile;
mod sys;
mod tensor;
mod weights;

pub use error::{Error, Result, Status};
pub use model::{LogLevel, MemoryStats, Model, Progress, RunStats};
pub use options::{Attention, BuiltinProvider, MemoryMode, ModelOptions};
pub use pack::pack_weights;
pub use profile::{measure_roofline, OpProfile, ProfileFormat, Roofline};
pub use tensor::{f16_to_f32, DType, Element, InputInfo, TensorView};
pub use weights::{provider_fn, BoxError, Lease, WeightRequest, WeightsLender, WeightsProvider};

/// Runtime library version as (major, minor, patch).
pub fn version() -> (u32, u32, u32) {
    // Safety: no arguments, no state.
    let v = unsafe { sys::onnxstream_version() };
    (v / 10000, v / 100 % 100, v % 100)
}

/// Runtime library version as "MAJOR.MINOR.PATCH".
pub fn version_string() -> &'static str {
    // Safety: static NUL-terminated storage.
    unsafe { tensor::static_str(sys::onnxstream_version_string()) }
}

/// The C name of a status code as the library spells it ("ONNXSTREAM_ERR_IO").
pub fn status_name(code: i32) -> &'static str {
    // Safety: static storage, defined for every value.
    unsafe { tensor::static_str(sys::onnxstream_status_name(code)) }
}
