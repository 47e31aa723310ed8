use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_int;

use crate::sys;

/// The status of a failed call, one variant per `ONNXSTREAM_ERR_*` code of the C API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// A bad argument: an unknown name, a wrong shape or size, a string with an interior NUL.
    InvalidArgument,
    /// model.txt does not parse, or shapes/dtypes do not check.
    InvalidModel,
    /// A file is missing, unreadable, truncated or too large.
    Io,
    /// An operator or attribute value this engine does not run.
    Unsupported,
    OutOfMemory,
    /// A host callback (weights provider, progress callback) failed or panicked.
    Callback,
    /// The progress callback asked to stop.
    Cancelled,
    /// The call is not valid now (e.g. run before load).
    BadState,
    /// A bug in onnxstream or a kernel library.
    Internal,
    /// A code this version of the crate does not know (a newer library).
    Unknown(i32),
}

impl Status {
    /// Maps a C status code; `None` for `ONNXSTREAM_OK`.
    pub fn from_code(code: i32) -> Option<Status> {
        Some(match code as c_int {
            sys::ONNXSTREAM_OK => return None,
            sys::ONNXSTREAM_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::ONNXSTREAM_ERR_INVALID_MODEL => Status::InvalidModel,
            sys::ONNXSTREAM_ERR_IO => Status::Io,
            sys::ONNXSTREAM_ERR_UNSUPPORTED => Status::Unsupported,
            sys::ONNXSTREAM_ERR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::ONNXSTREAM_ERR_CALLBACK => Status::Callback,
            sys::ONNXSTREAM_ERR_CANCELLED => Status::Cancelled,
            sys::ONNXSTREAM_ERR_BAD_STATE => Status::BadState,
            sys::ONNXSTREAM_ERR_INTERNAL => Status::Internal,
            other => Status::Unknown(other),
        })
    }

    /// The C status code.
    pub fn code(self) -> i32 {
        match self {
            Status::InvalidArgument => sys::ONNXSTREAM_ERR_INVALID_ARGUMENT,
            Status::InvalidModel => sys::ONNXSTREAM_ERR_INVALID_MODEL,
            Status::Io => sys::ONNXSTREAM_ERR_IO,
            Status::Unsupported => sys::ONNXSTREAM_ERR_UNSUPPORTED,
            Status::OutOfMemory => sys::ONNXSTREAM_ERR_OUT_OF_MEMORY,
            Status::Callback => sys::ONNXSTREAM_ERR_CALLBACK,
            Status::Cancelled => sys::ONNXSTREAM_ERR_CANCELLED,
            Status::BadState => sys::ONNXSTREAM_ERR_BAD_STATE,
            Status::Internal => sys::ONNXSTREAM_ERR_INTERNAL,
            Status::Unknown(code) => code,
        }
    }

    /// The C name of the status, as `onnxstream_status_name` spells it ("ONNXSTREAM_ERR_IO").
    pub fn name(self) -> &'static str {
        match self {
            Status::InvalidArgument => "ONNXSTREAM_ERR_INVALID_ARGUMENT",
            Status::InvalidModel => "ONNXSTREAM_ERR_INVALID_MODEL",
            Status::Io => "ONNXSTREAM_ERR_IO",
            Status::Unsupported => "ONNXSTREAM_ERR_UNSUPPORTED",
            Status::OutOfMemory => "ONNXSTREAM_ERR_OUT_OF_MEMORY",
            Status::Callback => "ONNXSTREAM_ERR_CALLBACK",
            Status::Cancelled => "ONNXSTREAM_ERR_CANCELLED",
            Status::BadState => "ONNXSTREAM_ERR_BAD_STATE",
            Status::Internal => "ONNXSTREAM_ERR_INTERNAL",
            Status::Unknown(_) => "ONNXSTREAM_UNKNOWN_STATUS",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Status::InvalidArgument => "invalid argument",
            Status::InvalidModel => "invalid model",
            Status::Io => "I/O error",
            Status::Unsupported => "unsupported",
            Status::OutOfMemory => "out of memory",
            Status::Callback => "callback failed",
            Status::Cancelled => "cancelled",
            Status::BadState => "bad state",
            Status::Internal => "internal error",
            Status::Unknown(_) => "unknown status",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Unknown(code) => write!(f, "unknown status {}", code),
            s => f.write_str(s.describe()),
        }
    }
}

/// An error from the library (or from argument checks done on the Rust side): a status and the
/// library's message, which names the op, file or argument at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// Builds the error for a failed C call from the model's (or the thread's) last message.
    pub(crate) fn from_c(code: sys::onnxstream_status_t, model: *const sys::onnxstream_model_t) -> Error {
        let status = Status::from_code(code).unwrap_or(Status::Internal);
        // Safety: both functions return a valid NUL-terminated string that lives until the next call.
        let message = unsafe {
            let p = if model.is_null() {
                sys::onnxstream_last_error()
            } else {
                sys::onnxstream_model_last_error(model)
            };
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Error { status, message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "onnxstream: {}", self.status)
        } else {
            write!(f, "onnxstream: {}: {}", self.status, self.message)
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Converts a C status into a `Result`, reading the message from `model` (or the thread) on failure.
pub(crate) fn check(code: sys::onnxstream_status_t, model: *const sys::onnxstream_model_t) -> Result<()> {
    if code == sys::ONNXSTREAM_OK {
        Ok(())
    } else {
        Err(Error::from_c(code, model))
    }
}
