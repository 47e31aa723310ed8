use std::mem::MaybeUninit;

use crate::sys;

/// The built-in weights sources (used unless a Rust provider is installed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuiltinProvider {
    /// Read each weight file when its op runs, free it after.
    NoCache,
    /// Like `NoCache`, with a background thread reading ahead (the default).
    Prefetch,
    /// Map weight files; pages are file-backed and shared.
    Mmap,
    /// Read once, keep every weight in memory for later runs.
    Ram,
}

impl BuiltinProvider {
    fn code(self) -> i32 {
        match self {
            BuiltinProvider::NoCache => sys::ONNXSTREAM_PROVIDER_NOCACHE,
            BuiltinProvider::Prefetch => sys::ONNXSTREAM_PROVIDER_PREFETCH,
            BuiltinProvider::Mmap => sys::ONNXSTREAM_PROVIDER_MMAP,
            BuiltinProvider::Ram => sys::ONNXSTREAM_PROVIDER_RAM,
        }
    }
}

/// Options for [`Model::new`](crate::Model::new); starts from the library's defaults.
///
/// ```no_run
/// use onnxstream::{BuiltinProvider, Model, ModelOptions};
/// let mut model = Model::new(&ModelOptions::new().threads(2).provider(BuiltinProvider::Mmap))?;
/// # Ok::<(), onnxstream::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ModelOptions {
    pub(crate) raw: sys::onnxstream_model_options_t,
}

impl ModelOptions {
    pub fn new() -> ModelOptions {
        let mut raw = MaybeUninit::<sys::onnxstream_model_options_t>::zeroed();
        // Safety: options_init writes every field of the struct it is given.
        unsafe {
            sys::onnxstream_model_options_init(raw.as_mut_ptr());
            ModelOptions { raw: raw.assume_init() }
        }
    }

    /// Worker threads; 0 = one per core (the default). Values the library rejects (over 1024) make
    /// [`Model::new`](crate::Model::new) fail with `InvalidArgument`.
    pub fn threads(mut self, threads: usize) -> ModelOptions {
        self.raw.threads = i32::try_from(threads).unwrap_or(i32::MAX);
        self
    }

    pub fn provider(mut self, provider: BuiltinProvider) -> ModelOptions {
        self.raw.provider = provider.code();
        self
    }

    /// Read-ahead budget of the prefetch provider; 0 = the library default (64 MiB).
    pub fn prefetch_bytes(mut self, bytes: u64) -> ModelOptions {
        self.raw.prefetch_bytes = bytes;
        self
    }
}

impl Default for ModelOptions {
    fn default() -> ModelOptions {
        ModelOptions::new()
    }
}
