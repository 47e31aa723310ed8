use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::mem::size_of;
use std::ops::ControlFlow;
use std::os::raw::{c_char, c_int, c_void};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

use crate::error::{check, Error, Result, Status};
use crate::options::ModelOptions;
use crate::profile::{OpProfile, ProfileFormat, Roofline};
use crate::sys;
use crate::tensor::{as_bytes, lossy, raw_slice, DType, Element, InputInfo, TensorView};
use crate::weights::{self, guarded, WeightsLender, WeightsProvider};

/// Progress of a run, reported after every op. Valid only during the callback.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    /// Index of the op that just finished (0-based).
    pub op_index: usize,
    pub op_count: usize,
    /// The op's name and type as written in model.txt.
    pub op_name: Cow<'a, str>,
    pub op_type: Cow<'a, str>,
    /// Time spent in this op, weight fetch included.
    pub elapsed: Duration,
    /// Tensor bytes alive after the op.
    pub current_bytes: u64,
    /// Tensor high-water mark of this run so far.
    pub peak_bytes: u64,
}

/// Severity of a diagnostic passed to the log callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
}

impl LogLevel {
    fn code(self) -> c_int {
        match self {
            LogLevel::Debug => sys::ONNXSTREAM_LOG_DEBUG,
            LogLevel::Info => sys::ONNXSTREAM_LOG_INFO,
            LogLevel::Warning => sys::ONNXSTREAM_LOG_WARNING,
            LogLevel::Error => sys::ONNXSTREAM_LOG_ERROR,
        }
    }

    fn from_code(code: c_int) -> LogLevel {
        match code {
            sys::ONNXSTREAM_LOG_DEBUG => LogLevel::Debug,
            sys::ONNXSTREAM_LOG_INFO => LogLevel::Info,
            sys::ONNXSTREAM_LOG_WARNING => LogLevel::Warning,
            _ => LogLevel::Error,
        }
    }
}

/// Memory figures of the model's tensor allocator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Tensor bytes alive now (outputs of the last run, pushed inputs, caches).
    pub current_bytes: u64,
    /// High-water mark since the last reset.
    pub peak_bytes: u64,
}

/// Figures of the last successful run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Wall time of the run.
    pub run_time: Duration,
    /// Bytes the weights provider read.
    pub weight_bytes_read: u64,
    /// Time spent reading weights, on any thread.
    pub weight_read_time: Duration,
    /// Time the run waited for weights (the rest of the read time was hidden behind compute).
    pub weight_wait_time: Duration,
    /// NCHW <-> NHWC activation transposes done (in ops and at the layout plan's boundaries).
    pub layout_transposes: u64,
    /// Bytes written turning weights into kernel input (layout changes, widening, dequantization, copies).
    pub weight_bytes_copied: u64,
    /// Ops that computed an 8-bit weight in int8 arithmetic (builds against XNNPACK's 2024 API).
    pub int8_ops: u64,
    /// Since 0.15: operators whose packed weights were mapped from the packed-weights file
    /// (`<cache_path>.xnnpack`) instead of being packed (builds against XNNPACK's 2024 API).
    pub packed_weights_mapped: u64,
    /// Since 0.15: operators whose packed weights this run wrote to that file (the first complete run
    /// of a model builds it).
    pub packed_weights_stored: u64,
    /// Since 0.20: ops keeping their prepared kernels between runs within the memory mode's budget
    /// (balanced; 0 in min, and in max-speed, which keeps every op's).
    pub kept_kernels: u64,
    /// Since 0.20: the memory those kept kernels hold.
    pub kept_kernel_bytes: u64,
}

type ProgressFn = dyn FnMut(&Progress<'_>) -> ControlFlow<()> + Send;
type LogFn = dyn FnMut(LogLevel, &str) + Send;

struct ProgressSlot {
    f: Box<ProgressFn>,
    panic: Option<String>,
}

struct LogSlot {
    f: Box<LogFn>,
}

/// A heap value whose address is handed to C as user_data. Held as a raw pointer rather than a `Box`
/// so that moving the `Model` never asserts unique ownership over memory a callback may be using.
struct Owned<T>(NonNull<T>);

impl<T> Owned<T> {
    fn new(value: T) -> Owned<T> {
        Owned(NonNull::from(Box::leak(Box::new(value))))
    }

    fn as_ptr(&self) -> *mut T {
        self.0.as_ptr()
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        // Safety: created by Box::leak in `new`, freed once here.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// A loaded (or empty) model: the owner of a `onnxstream_model_t`.
///
/// `Model` is `Send` but not `Sync`: one thread at a time may use it, as the C API requires. Methods
/// that change what outputs point to (`run`, `load`, `push`) take `&mut self`, so a [`TensorView`]
/// borrowed from `output` cannot outlive them.
pub struct Model {
    raw: NonNull<sys::onnxstream_model_t>,
    // Their addresses are the callbacks' user_data; dropped after the C model (see Drop).
    progress: Option<Owned<ProgressSlot>>,
    log: Option<Owned<LogSlot>>,
}

// Safety: the C model may be used from any thread, one at a time; everything the callbacks capture is
// Send (the trait bounds require it).
unsafe impl Send for Model {}

fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(Status::InvalidArgument, format!("{} '{}' contains a NUL byte", what, s.escape_debug()))
    })
}

pub(crate) fn path_cstring(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes: Vec<u8> = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes: Vec<u8> = match path.to_str() {
        Some(s) => s.as_bytes().to_vec(),
        None => {
            return Err(Error::new(
                Status::InvalidArgument,
                format!("path {} is not valid Unicode", path.display()),
            ))
        }
    };
    CString::new(bytes).map_err(|_| {
        Error::new(Status::InvalidArgument, format!("path {} contains a NUL byte", path.display()))
    })
}

fn empty_view() -> sys::onnxstream_tensor_view_t {
    sys::onnxstream_tensor_view_t {
        struct_size: size_of::<sys::onnxstream_tensor_view_t>() as u32,
        name: ptr::null(),
        dtype: 0,
        rank: 0,
        shape: ptr::null(),
        data: ptr::null(),
        byte_size: 0,
    }
}

impl Model {
    /// Creates an empty model; load one with [`load`](Model::load) or [`load_str`](Model::load_str).
    pub fn new(options: &ModelOptions) -> Result<Model> {
        let mut raw: *mut sys::onnxstream_model_t = ptr::null_mut();
        let mut raw_options = options.raw;
        raw_options.cache_path = match &options.cache_path {
            None => ptr::null(),
            Some(Ok(path)) => path.as_ptr(),
            Some(Err(path)) => {
                return Err(Error::new(
                    Status::InvalidArgument,
                    format!("cache path {:?} contains a NUL byte", path),
                ))
            }
        };
        // Safety: valid pointers (the cache path outlives the call, which copies it); on failure the
        // message is in the thread's last error.
        check(unsafe { sys::onnxstream_model_create(&raw_options, &mut raw) }, ptr::null())?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::new(Status::Internal, "onnxstream_model_create returned OK but no model")
        })?;
        Ok(Model { raw, progress: None, log: None })
    }

    /// Creates a model with default options and loads `path` (a folder with model.txt, or model.txt).
    pub fn open(path: impl AsRef<Path>) -> Result<Model> {
        let mut model = Model::new(&ModelOptions::new())?;
        model.load(path)?;
        Ok(model)
    }

    fn ptr(&self) -> *mut sys::onnxstream_model_t {
        self.raw.as_ptr()
    }

    fn check(&self, code: sys::onnxstream_status_t) -> Result<()> {
        check(code, self.ptr())
    }

    /// Loads a folder containing model.txt, or a model.txt file (weights next to it).
    pub fn load(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_cstring(path.as_ref())?;
        // Safety: valid model and NUL-terminated path.
        self.check(unsafe { sys::onnxstream_model_load(self.ptr(), path.as_ptr()) })
    }

    /// Loads model.txt text; weight files are resolved against `weights_dir` (None when a Rust weights
    /// provider serves every weight).
    pub fn load_str(&mut self, model_txt: &str, weights_dir: Option<&Path>) -> Result<()> {
        let text = CString::new(model_txt)
            .map_err(|_| Error::new(Status::InvalidArgument, "model.txt text contains a NUL byte"))?;
        let dir = match weights_dir {
            Some(d) => Some(path_cstring(d)?),
            None => None,
        };
        let dir_ptr = dir.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        // Safety: valid model and strings.
        self.check(unsafe { sys::onnxstream_model_load_string(self.ptr(), text.as_ptr(), dir_ptr) })
    }

    /// Keeps a tensor as an output even though later ops consume it (escaped or original spelling).
    pub fn add_output(&mut self, name: &str) -> Result<()> {
        let name = cstring("tensor name", name)?;
        // Safety: valid model and string.
        self.check(unsafe { sys::onnxstream_model_add_output(self.ptr(), name.as_ptr()) })
    }

    /// Applies a LoRA (safetensors up/down pairs) while the weights stream, from the next run on: each weight
    /// W it names is used as W + scale · (alpha / rank) · up · down. Takes the modules whose keys start with
    /// `key_prefix` ("" for all) and returns how many it took (docs/lora.md).
    pub fn add_lora<P: AsRef<Path>>(&mut self, path: P, scale: f32, key_prefix: &str) -> Result<usize> {
        let path = path_cstring(path.as_ref())?;
        let prefix = cstring("key prefix", key_prefix)?;
        let mut taken: usize = 0;
        // Safety: valid model, strings and out pointer.
        self.check(unsafe {
            sys::onnxstream_model_add_lora(self.ptr(), path.as_ptr(), scale, prefix.as_ptr(), &mut taken)
        })?;
        Ok(taken)
    }

    /// Reads activation ranges (OnnxStream's `range_data.txt`) for static W8A8; a model folder's own
    /// `range_data.txt` is read at load.
    pub fn read_range_data(&mut self, path: &str) -> Result<()> {
        let path = cstring("path", path)?;
        // Safety: valid model and string.
        self.check(unsafe { sys::onnxstream_model_read_range_data(self.ptr(), path.as_ptr()) })
    }

    /// Writes the activation ranges (while calibrating, the recorded ones) atomically.
    pub fn write_range_data(&mut self, path: &str) -> Result<()> {
        let path = cstring("path", path)?;
        // Safety: valid model and string.
        self.check(unsafe { sys::onnxstream_model_write_range_data(self.ptr(), path.as_ptr()) })
    }

    /// Calibration on or off: while on, runs compute in float and record activation ranges.
    pub fn set_calibrate(&mut self, on: bool) -> Result<()> {
        // Safety: valid model.
        self.check(unsafe { sys::onnxstream_model_set_calibrate(self.ptr(), i32::from(on)) })
    }

    /// Serves every weight from `provider` instead of the built-in readers. The model owns it from now
    /// on and drops it exactly once (when the model is dropped or another provider replaces it).
    /// On error the provider is dropped before returning.
    pub fn set_weights_provider<P: WeightsProvider>(&mut self, provider: P) -> Result<()> {
        self.check(weights::register(self.ptr(), &weights::provider_vtable::<P>(), provider))
    }

    /// Like [`set_weights_provider`](Model::set_weights_provider), for a zero-copy lender.
    pub fn set_weights_lender<L: WeightsLender>(&mut self, lender: L) -> Result<()> {
        self.check(weights::register(self.ptr(), &weights::lender_vtable::<L>(), lender))
    }

    /// Calls `f` after every op of a run; returning `ControlFlow::Break(())` cancels the run
    /// (`Status::Cancelled`). A panic in `f` cancels the run too, and `run` returns
    /// `Status::Callback` with the panic message.
    pub fn set_progress_callback<F>(&mut self, f: F) -> Result<()>
    where
        F: FnMut(&Progress<'_>) -> ControlFlow<()> + Send + 'static,
    {
        let slot = Owned::new(ProgressSlot { f: Box::new(f), panic: None });
        let ud = slot.as_ptr() as *mut c_void;
        // Safety: ud stays valid while installed: the slot is kept until replaced or the model dropped.
        self.check(unsafe {
            sys::onnxstream_model_set_progress_callback(self.ptr(), Some(progress_trampoline), ud)
        })?;
        self.progress = Some(slot);
        Ok(())
    }

    pub fn clear_progress_callback(&mut self) -> Result<()> {
        // Safety: valid model; NULL clears.
        self.check(unsafe {
            sys::onnxstream_model_set_progress_callback(self.ptr(), None, ptr::null_mut())
        })?;
        self.progress = None;
        Ok(())
    }

    /// Routes diagnostics at `min_level` and above to `f` (the library is silent by default).
    /// A panic in `f` is caught and the message dropped.
    pub fn set_log_callback<F>(&mut self, min_level: LogLevel, f: F) -> Result<()>
    where
        F: FnMut(LogLevel, &str) + Send + 'static,
    {
        let slot = Owned::new(LogSlot { f: Box::new(f) });
        let ud = slot.as_ptr() as *mut c_void;
        // Safety: as in set_progress_callback.
        self.check(unsafe {
            sys::onnxstream_model_set_log_callback(self.ptr(), Some(log_trampoline), ud, min_level.code())
        })?;
        self.log = Some(slot);
        Ok(())
    }

    pub fn clear_log_callback(&mut self) -> Result<()> {
        // Safety: valid model; NULL clears.
        self.check(unsafe {
            sys::onnxstream_model_set_log_callback(
                self.ptr(),
                None,
                ptr::null_mut(),
                sys::ONNXSTREAM_LOG_ERROR,
            )
        })?;
        self.log = None;
        Ok(())
    }

    /// Sets a graph input (copied). `shape` must match model.txt's declaration.
    pub fn push<T: Element>(&mut self, name: &str, shape: &[i64], data: &[T]) -> Result<()> {
        self.push_bytes(name, T::DTYPE, shape, as_bytes(data))
    }

    /// Sets a graph input from raw little-endian bytes of any dtype (float16, bool, ...).
    pub fn push_bytes(&mut self, name: &str, dtype: DType, shape: &[i64], data: &[u8]) -> Result<()> {
        let name = cstring("input name", name)?;
        // Safety: valid pointers; the library copies the data during the call.
        self.check(unsafe {
            sys::onnxstream_model_push_tensor(
                self.ptr(),
                name.as_ptr(),
                dtype.code(),
                shape.len(),
                shape.as_ptr(),
                data.as_ptr() as *const c_void,
                data.len(),
            )
        })
    }

    /// Runs the model on the pushed inputs. On failure the model stays usable.
    pub fn run(&mut self) -> Result<()> {
        let slot = self.progress.as_ref().map(|s| s.as_ptr());
        // Safety: the slot is alive (owned by self); no callback runs outside onnxstream_model_run.
        if let Some(slot) = slot {
            unsafe { (*slot).panic = None };
        }
        // Safety: valid model; callbacks' user data is owned by self and outlives the call.
        let code = unsafe { sys::onnxstream_model_run(self.ptr()) };
        if let Some(message) = slot.and_then(|s| unsafe { (*s).panic.take() }) {
            return Err(Error::new(Status::Callback, format!("progress callback {}", message)));
        }
        self.check(code)
    }

    /// The graph inputs (tensors no op produces) as model.txt declares them.
    pub fn inputs(&self) -> Result<Vec<InputInfo>> {
        // Safety: valid model.
        let n = unsafe { sys::onnxstream_model_input_count(self.ptr()) };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut v = empty_view();
            // Safety: valid model and view.
            self.check(unsafe { sys::onnxstream_model_get_input(self.ptr(), i, &mut v) })?;
            // Safety: the view's strings and shape stay valid while the model lives; copied right away.
            unsafe {
                out.push(InputInfo {
                    name: lossy(v.name).into_owned(),
                    shape: raw_slice(v.shape, v.rank).to_vec(),
                    dtype: DType::from_code(v.dtype),
                });
            }
        }
        Ok(out)
    }

    /// Number of outputs of the last successful run (0 before one).
    pub fn output_count(&self) -> usize {
        // Safety: valid model.
        unsafe { sys::onnxstream_model_output_count(self.ptr()) }
    }

    /// Output number `index` of the last successful run.
    pub fn output(&self, index: usize) -> Result<TensorView<'_>> {
        let mut v = empty_view();
        // Safety: valid model and view; the view stays valid until the next &mut call.
        self.check(unsafe { sys::onnxstream_model_get_output(self.ptr(), index, &mut v) })?;
        Ok(unsafe { TensorView::from_raw(&v) })
    }

    /// The output called `name` (escaped or original spelling) of the last successful run.
    pub fn output_by_name(&self, name: &str) -> Result<TensorView<'_>> {
        let name = cstring("output name", name)?;
        let mut v = empty_view();
        // Safety: as in output.
        self.check(unsafe { sys::onnxstream_model_get_output_by_name(self.ptr(), name.as_ptr(), &mut v) })?;
        Ok(unsafe { TensorView::from_raw(&v) })
    }

    /// Every output of the last successful run, in model.txt order.
    pub fn outputs(&self) -> Result<Vec<TensorView<'_>>> {
        (0..self.output_count()).map(|i| self.output(i)).collect()
    }

    pub fn memory_stats(&self) -> Result<MemoryStats> {
        self.memory_stats_impl(false)
    }

    /// Returns the memory figures and restarts the high-water mark from the current bytes.
    pub fn reset_peak_memory(&mut self) -> Result<MemoryStats> {
        self.memory_stats_impl(true)
    }

    fn memory_stats_impl(&self, reset: bool) -> Result<MemoryStats> {
        let mut s = sys::onnxstream_memory_stats_t {
            struct_size: size_of::<sys::onnxstream_memory_stats_t>() as u32,
            current_bytes: 0,
            peak_bytes: 0,
        };
        // Safety: valid model and struct.
        self.check(unsafe { sys::onnxstream_model_memory_stats(self.ptr(), &mut s, reset as c_int) })?;
        Ok(MemoryStats { current_bytes: s.current_bytes, peak_bytes: s.peak_bytes })
    }

    /// Figures of the last successful run (zeros before one).
    pub fn run_stats(&self) -> Result<RunStats> {
        let mut s = sys::onnxstream_run_stats_t {
            struct_size: size_of::<sys::onnxstream_run_stats_t>() as u32,
            run_us: 0,
            weight_bytes_read: 0,
            weight_read_us: 0,
            weight_wait_us: 0,
            layout_transposes: 0,
            fp16_ops: 0,
            fp16_fallbacks: 0,
            arithmetic: 0,
            weight_bytes_copied: 0,
            int8_ops: 0,
            packed_weights_mapped: 0,
            packed_weights_stored: 0,
            kept_kernels: 0,
            kept_kernel_bytes: 0,
        };
        // Safety: valid model and struct.
        self.check(unsafe { sys::onnxstream_model_run_stats(self.ptr(), &mut s) })?;
        Ok(RunStats {
            run_time: Duration::from_micros(s.run_us),
            weight_bytes_read: s.weight_bytes_read,
            weight_read_time: Duration::from_micros(s.weight_read_us),
            weight_wait_time: Duration::from_micros(s.weight_wait_us),
            layout_transposes: s.layout_transposes,
            weight_bytes_copied: s.weight_bytes_copied,
            int8_ops: s.int8_ops,
            packed_weights_mapped: s.packed_weights_mapped,
            packed_weights_stored: s.packed_weights_stored,
            kept_kernels: s.kept_kernels,
            kept_kernel_bytes: s.kept_kernel_bytes,
        })
    }

    /// The per-op profile of the last successful run, in execution order: empty unless the model was
    /// created with [`ModelOptions::profile`] and has run. The records are owned copies.
    pub fn profile(&self) -> Result<Vec<OpProfile>> {
        // Safety: valid model.
        let n = unsafe { sys::onnxstream_model_profile_op_count(self.ptr()) };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut p = sys::onnxstream_op_profile_t {
                struct_size: size_of::<sys::onnxstream_op_profile_t>() as u32,
                op_index: 0,
                line: 0,
                op_name: ptr::null(),
                op_type: ptr::null(),
                inputs: ptr::null(),
                outputs: ptr::null(),
                start_ns: 0,
                duration_ns: 0,
                weight_wait_ns: 0,
                kernel_prepare_ns: 0,
                flops: 0,
                weight_bytes: 0,
                activation_bytes: 0,
                memory_bytes: 0,
            };
            // Safety: valid model and struct.
            self.check(unsafe { sys::onnxstream_model_get_op_profile(self.ptr(), i, &mut p) })?;
            // Safety: the strings stay valid until the next run, load or destroy; copied right away.
            unsafe {
                out.push(OpProfile {
                    op_index: p.op_index,
                    line: p.line,
                    op_name: lossy(p.op_name).into_owned(),
                    op_type: lossy(p.op_type).into_owned(),
                    inputs: lossy(p.inputs).into_owned(),
                    outputs: lossy(p.outputs).into_owned(),
                    start_ns: p.start_ns,
                    duration_ns: p.duration_ns,
                    weight_wait_ns: p.weight_wait_ns,
                    kernel_prepare_ns: p.kernel_prepare_ns,
                    flops: p.flops,
                    weight_bytes: p.weight_bytes,
                    activation_bytes: p.activation_bytes,
                    memory_bytes: p.memory_bytes,
                });
            }
        }
        Ok(out)
    }

    /// Renders the last successful run's profile as Chrome trace JSON or a per-type summary table.
    /// `peak` (from [`measure_roofline`](crate::measure_roofline)) adds the summary's "% peak" column.
    /// Fails with `Status::BadState` when the model was created without [`ModelOptions::profile`] or
    /// has not run successfully yet.
    pub fn render_profile(&self, format: ProfileFormat, peak: Option<&Roofline>) -> Result<String> {
        let raw_peak = peak.map(|p| p.to_raw());
        let peak_ptr = raw_peak.as_ref().map_or(ptr::null(), |p| p as *const sys::onnxstream_roofline_t);
        let mut text: *const c_char = ptr::null();
        let mut length: usize = 0;
        // Safety: valid model and pointers; the peak struct outlives the call.
        self.check(unsafe {
            sys::onnxstream_model_render_profile(self.ptr(), format.code(), peak_ptr, &mut text, &mut length)
        })?;
        // Safety: text holds length bytes until the next render, run, load or destroy; copied right away.
        let bytes = unsafe { raw_slice(text as *const u8, length) };
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // Destroys the C model first: it calls the weights provider's destroy, and no callback can
        // reach the progress/log slots dropped right after.
        // Safety: the pointer came from onnxstream_model_create and is destroyed once.
        unsafe { sys::onnxstream_model_destroy(self.ptr()) };
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("raw", &self.raw).field("outputs", &self.output_count()).finish()
    }
}

unsafe extern "C" fn progress_trampoline(
    user_data: *mut c_void,
    p: *const sys::onnxstream_progress_t,
) -> c_int {
    // Safety: user_data is the ProgressSlot installed by set_progress_callback; p is valid.
    let slot = &mut *(user_data as *mut ProgressSlot);
    let p = &*p;
    let f = &mut slot.f;
    let result = guarded(|| {
        let progress = Progress {
            op_index: p.op_index,
            op_count: p.op_count,
            op_name: lossy(p.op_name),
            op_type: lossy(p.op_type),
            elapsed: Duration::from_micros(p.elapsed_us),
            current_bytes: p.current_bytes,
            peak_bytes: p.peak_bytes,
        };
        Ok(f(&progress))
    });
    match result {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(message) => {
            slot.panic = Some(message);
            1
        }
    }
}

unsafe extern "C" fn log_trampoline(user_data: *mut c_void, level: c_int, message: *const c_char) {
    // Safety: user_data is the LogSlot installed by set_log_callback; message is NUL-terminated.
    let slot = &mut *(user_data as *mut LogSlot);
    let _ = guarded(|| {
        let text =
            if message.is_null() { Cow::Borrowed("") } else { CStr::from_ptr(message).to_string_lossy() };
        (slot.f)(LogLevel::from_code(level), &text);
        Ok(())
    });
}
