//! Weights served by Rust code instead of the built-in file readers.
//!
//! Every callback runs inside `catch_unwind`: an `Err` or a panic becomes `ONNXSTREAM_ERR_CALLBACK`
//! with the error's (or the panic's) message, so nothing ever unwinds into C. The provider value is
//! owned by the model from `set_weights_*` on and dropped exactly once, when the model is dropped or
//! the provider is replaced.

use std::any::Any;
use std::borrow::Cow;
use std::mem::size_of;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use crate::sys;
use crate::tensor::{lossy, raw_slice, DType};

/// The error type callbacks return: anything convertible, e.g. `"message".into()` or an `io::Error`
/// through `?`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What the engine asks for: one weight file of model.txt. Valid only during the callback.
pub struct WeightRequest<'a> {
    raw: &'a sys::onnxstream_weight_request_t,
}

impl<'a> WeightRequest<'a> {
    /// The weight file name as written in model.txt (escaped form, e.g. `model_2E_0_2E_conv_2E_bias.bin`).
    pub fn file(&self) -> Cow<'a, str> {
        // Safety: the engine passes a valid NUL-terminated name for the duration of the callback.
        unsafe { lossy(self.raw.file) }
    }

    pub fn dtype(&self) -> DType {
        DType::from_code(self.raw.dtype)
    }

    pub fn shape(&self) -> &'a [i64] {
        // Safety: rank dimensions, valid during the callback.
        unsafe { raw_slice(self.raw.shape, self.raw.rank) }
    }

    /// Exact number of bytes expected.
    pub fn byte_size(&self) -> usize {
        self.raw.byte_size
    }
}

impl std::fmt::Debug for WeightRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeightRequest")
            .field("file", &self.file())
            .field("dtype", &self.dtype())
            .field("shape", &self.shape())
            .field("byte_size", &self.byte_size())
            .finish()
    }
}

/// A source of weights that copies each one into a buffer the engine owns.
///
/// Closures `FnMut(&WeightRequest, &mut [u8]) -> Result<(), BoxError>` implement it too; wrap one in
/// [`provider_fn`] so the compiler infers the argument types.
///
/// Calls for one model never overlap. They come from the thread that runs the model, except
/// `prefetch`, which may come from the engine's prefetch thread; hence `Send`.
pub trait WeightsProvider: Send + 'static {
    /// Fill `dst` (exactly `req.byte_size()` bytes, zeroed) with the weight's little-endian contents.
    fn read(&mut self, req: &WeightRequest<'_>, dst: &mut [u8]) -> Result<(), BoxError>;

    /// Hint that `req` will be asked for soon (called in execution order). Default: nothing.
    fn prefetch(&mut self, _req: &WeightRequest<'_>) {}
}

impl<F> WeightsProvider for F
where
    F: FnMut(&WeightRequest<'_>, &mut [u8]) -> Result<(), BoxError> + Send + 'static,
{
    fn read(&mut self, req: &WeightRequest<'_>, dst: &mut [u8]) -> Result<(), BoxError> {
        self(req, dst)
    }
}

/// Returns `f` unchanged; exists so that a closure passed to `set_weights_provider` gets its argument
/// types (with their lifetimes) inferred.
pub fn provider_fn<F>(f: F) -> F
where
    F: FnMut(&WeightRequest<'_>, &mut [u8]) -> Result<(), BoxError> + Send + 'static,
{
    f
}

/// Bytes lent to the engine without a copy. Whatever owns them (a `Vec<u8>`, an `Arc<[u8]>`, a memory
/// map, a `&'static [u8]`) is moved in and dropped when the engine releases the weight, after the op
/// that used it: put release bookkeeping in the owner's `Drop`.
pub struct Lease {
    owner: Box<dyn AsRef<[u8]> + Send>,
}

impl Lease {
    pub fn new<T: AsRef<[u8]> + Send + 'static>(owner: T) -> Lease {
        Lease { owner: Box::new(owner) }
    }
}

/// A zero-copy source of weights: lends bytes that stay valid until the engine releases them.
/// The same thread rules as [`WeightsProvider`] apply.
pub trait WeightsLender: Send + 'static {
    /// Lend exactly `req.byte_size()` bytes, aligned to the dtype's element size.
    fn lend(&mut self, req: &WeightRequest<'_>) -> Result<Lease, BoxError>;

    /// Hint that `req` will be asked for soon (called in execution order). Default: nothing.
    fn prefetch(&mut self, _req: &WeightRequest<'_>) {}
}

/// Copies `message` into the request's error buffer (truncated on a char boundary, NUL-terminated).
unsafe fn write_message(req: &sys::onnxstream_weight_request_t, message: &str) {
    if req.error_message.is_null() || req.error_message_capacity == 0 {
        return;
    }
    let mut n = message.len().min(req.error_message_capacity - 1);
    while !message.is_char_boundary(n) {
        n -= 1;
    }
    ptr::copy_nonoverlapping(message.as_ptr(), req.error_message as *mut u8, n);
    *req.error_message.add(n) = 0;
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// Runs `body` so that neither an `Err` nor a panic escapes; the failure text is returned instead.
/// Dropping the panic payload may itself panic, so that is caught too.
pub(crate) fn guarded<T>(body: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            let message = format!("panicked: {}", panic_message(&*payload));
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            Err(message)
        }
    }
}

fn fail(req: &sys::onnxstream_weight_request_t, message: &str) -> sys::onnxstream_status_t {
    // Safety: the request and its buffer are valid during the callback.
    unsafe { write_message(req, message) };
    sys::ONNXSTREAM_ERR_CALLBACK
}

/// Formats an error together with its source chain ("outer: inner: ...").
fn describe(e: &BoxError) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

unsafe extern "C" fn read_trampoline<P: WeightsProvider>(
    user_data: *mut c_void,
    req: *const sys::onnxstream_weight_request_t,
    dst: *mut c_void,
) -> sys::onnxstream_status_t {
    let req = &*req;
    let result = guarded(|| {
        // Safety: user_data is the Box<P> leaked in `register`; calls for one model never overlap.
        let provider = &mut *(user_data as *mut P);
        let n = req.byte_size;
        let buf: &mut [u8] = if n == 0 || dst.is_null() {
            &mut []
        } else {
            // The engine's buffer is uninitialised; zero it so it can be handed out as &mut [u8].
            ptr::write_bytes(dst as *mut u8, 0, n);
            std::slice::from_raw_parts_mut(dst as *mut u8, n)
        };
        provider.read(&WeightRequest { raw: req }, buf).map_err(|e| describe(&e))
    });
    match result {
        Ok(()) => sys::ONNXSTREAM_OK,
        Err(message) => fail(req, &message),
    }
}

unsafe extern "C" fn acquire_trampoline<L: WeightsLender>(
    user_data: *mut c_void,
    req: *const sys::onnxstream_weight_request_t,
    data: *mut *const c_void,
    token: *mut *mut c_void,
) -> sys::onnxstream_status_t {
    let req = &*req;
    let result = guarded(|| {
        // Safety: as in read_trampoline.
        let lender = &mut *(user_data as *mut L);
        let request = WeightRequest { raw: req };
        let lease = lender.lend(&request).map_err(|e| describe(&e))?;
        let lease = Box::new(lease);
        let (p, len) = {
            let bytes: &[u8] = (*lease.owner).as_ref();
            (bytes.as_ptr(), bytes.len())
        };
        if len != req.byte_size {
            return Err(format!("lent {} bytes but the weight needs {}", len, req.byte_size));
        }
        let align = request.dtype().size().max(1);
        if len != 0 && p as usize % align != 0 {
            return Err(format!(
                "lent bytes at {:p} are not aligned to {} bytes for {}",
                p,
                align,
                request.dtype()
            ));
        }
        // The owner lives in a heap box that is neither moved nor touched until release, so the bytes
        // it lent stay where they are.
        Ok((p as *const c_void, Box::into_raw(lease) as *mut c_void))
    });
    match result {
        Ok((p, t)) => {
            *data = p;
            *token = t;
            sys::ONNXSTREAM_OK
        }
        Err(message) => fail(req, &message),
    }
}

/// Does not touch user_data: a lease is self-contained, so a late release is harmless.
unsafe extern "C" fn release_trampoline(_user_data: *mut c_void, token: *mut c_void) {
    if token.is_null() {
        return;
    }
    let lease = Box::from_raw(token as *mut Lease);
    let _ = catch_unwind(AssertUnwindSafe(move || drop(lease)));
}

unsafe extern "C" fn provider_prefetch_trampoline<P: WeightsProvider>(
    user_data: *mut c_void,
    req: *const sys::onnxstream_weight_request_t,
) {
    let req = &*req;
    let _ = guarded(|| {
        (*(user_data as *mut P)).prefetch(&WeightRequest { raw: req });
        Ok(())
    });
}

unsafe extern "C" fn lender_prefetch_trampoline<L: WeightsLender>(
    user_data: *mut c_void,
    req: *const sys::onnxstream_weight_request_t,
) {
    let req = &*req;
    let _ = guarded(|| {
        (*(user_data as *mut L)).prefetch(&WeightRequest { raw: req });
        Ok(())
    });
}

unsafe extern "C" fn destroy_trampoline<T: Send + 'static>(user_data: *mut c_void) {
    let value = Box::from_raw(user_data as *mut T);
    let _ = catch_unwind(AssertUnwindSafe(move || drop(value)));
}

fn vtable() -> sys::onnxstream_weights_provider_t {
    sys::onnxstream_weights_provider_t {
        struct_size: size_of::<sys::onnxstream_weights_provider_t>() as u32,
        read: None,
        acquire: None,
        release: None,
        prefetch: None,
        destroy: None,
    }
}

pub(crate) fn provider_vtable<P: WeightsProvider>() -> sys::onnxstream_weights_provider_t {
    sys::onnxstream_weights_provider_t {
        read: Some(read_trampoline::<P>),
        prefetch: Some(provider_prefetch_trampoline::<P>),
        destroy: Some(destroy_trampoline::<P>),
        ..vtable()
    }
}

pub(crate) fn lender_vtable<L: WeightsLender>() -> sys::onnxstream_weights_provider_t {
    sys::onnxstream_weights_provider_t {
        acquire: Some(acquire_trampoline::<L>),
        release: Some(release_trampoline),
        prefetch: Some(lender_prefetch_trampoline::<L>),
        destroy: Some(destroy_trampoline::<L>),
        ..vtable()
    }
}

/// Hands `value` to the model with `vt`. On success the model owns it (its destroy callback drops
/// it); on failure the library did not take it and it is dropped here.
pub(crate) fn register<T: Send + 'static>(
    model: *mut sys::onnxstream_model_t,
    vt: &sys::onnxstream_weights_provider_t,
    value: T,
) -> sys::onnxstream_status_t {
    let raw = Box::into_raw(Box::new(value));
    // Safety: vt and raw are valid; the library copies the vtable.
    let status = unsafe { sys::onnxstream_model_set_weights_provider(model, vt, raw as *mut c_void) };
    if status != sys::ONNXSTREAM_OK {
        // Safety: not taken by the library (its contract), so we still own it.
        drop(unsafe { Box::from_raw(raw) });
    }
    status
}
