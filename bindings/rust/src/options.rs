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

/// How much memory a run may use to go faster (docs/benchmarks.md in the repository has measured figures).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryMode {
    /// Default: streamed weights read per op, bounded weight chunks and attention blocks.
    Balanced,
    /// Smallest working set: no read-ahead, small weight chunks, flash attention.
    Min,
    /// Keep prepared weights in RAM between runs.
    MaxSpeed,
}

/// How attention ops are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Attention {
    /// The fastest kind within the memory mode's budget (default).
    Auto,
    /// The whole score matrix per head.
    Full,
    /// OnnxStream's attention slicing: Q split into row parts.
    Sliced,
    /// Online softmax over key blocks (FlashAttention-style).
    Flash,
}

/// Options for [`Model::new`](crate::Model::new); starts from the library's defaults.
///
/// ```no_run
/// use onnxstream::{BuiltinProvider, Model, ModelOptions};
/// let mut model = Model::new(&ModelOptions::new().threads(2).provider(BuiltinProvider::Mmap))?;
/// # Ok::<(), onnxstream::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ModelOptions {
    pub(crate) raw: sys::onnxstream_model_options_t,
    // raw.cache_path is set from this in Model::new (the library copies the string there), so clones
    // never share a pointer. Err holds a path with an interior NUL byte, reported by Model::new.
    pub(crate) cache_path: Option<std::result::Result<std::ffi::CString, String>>,
}

impl ModelOptions {
    pub fn new() -> ModelOptions {
        let mut raw = MaybeUninit::<sys::onnxstream_model_options_t>::zeroed();
        // Safety: options_init writes every field of the struct it is given.
        unsafe {
            sys::onnxstream_model_options_init(raw.as_mut_ptr());
            ModelOptions { raw: raw.assume_init(), cache_path: None }
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

    /// Read-ahead budget of the prefetch provider; 0 = from the memory mode.
    pub fn prefetch_bytes(mut self, bytes: u64) -> ModelOptions {
        self.raw.prefetch_bytes = bytes;
        self
    }

    pub fn memory_mode(mut self, mode: MemoryMode) -> ModelOptions {
        self.raw.memory_mode = match mode {
            MemoryMode::Balanced => sys::ONNXSTREAM_MEMORY_BALANCED,
            MemoryMode::Min => sys::ONNXSTREAM_MEMORY_MIN,
            MemoryMode::MaxSpeed => sys::ONNXSTREAM_MEMORY_MAX_SPEED,
        };
        self
    }

    pub fn attention(mut self, attention: Attention) -> ModelOptions {
        self.raw.attention = match attention {
            Attention::Auto => sys::ONNXSTREAM_ATTENTION_AUTO,
            Attention::Full => sys::ONNXSTREAM_ATTENTION_FULL,
            Attention::Sliced => sys::ONNXSTREAM_ATTENTION_SLICED,
            Attention::Flash => sys::ONNXSTREAM_ATTENTION_FLASH,
        };
        self
    }

    /// Number of Q parts for [`Attention::Sliced`]; 0 = from the memory mode.
    pub fn attention_slices(mut self, slices: usize) -> ModelOptions {
        self.raw.attention_slices = i32::try_from(slices).unwrap_or(i32::MAX);
        self
    }

    /// Stream weights bigger than this many bytes in chunks; `None` = never, `Some(0)` = from the
    /// memory mode.
    pub fn weight_chunk_bytes(mut self, bytes: Option<u64>) -> ModelOptions {
        self.raw.weight_chunk_bytes = bytes.unwrap_or(u64::MAX);
        self
    }

    /// Memory for prepared kernels kept between runs, in bytes; `None` = none, `Some(0)` = from the
    /// memory mode (balanced 24 MiB; the default). What is kept: `kept_kernel_bytes` in
    /// include/onnxstream.h.
    pub fn kept_kernel_bytes(mut self, bytes: Option<u64>) -> ModelOptions {
        self.raw.kept_kernel_bytes = bytes.unwrap_or(u64::MAX);
        self
    }

    /// Memory budget of the model's tracked tensor memory in bytes; `None` = no limit (the default).
    /// A run that would pass it fails with [`Error`](crate::Error) status `OutOfMemory`; the model stays
    /// usable. What counts is documented at `max_bytes` in include/onnxstream.h.
    pub fn max_bytes(mut self, bytes: Option<u64>) -> ModelOptions {
        self.raw.max_bytes = bytes.unwrap_or(0);
        self
    }

    /// Record a per-op profile of every run, read with [`Model::profile`](crate::Model::profile) and
    /// [`Model::render_profile`](crate::Model::render_profile). It costs two clock reads per op and no
    /// memory; off (the default), the engine records nothing.
    pub fn profile(mut self, on: bool) -> ModelOptions {
        if on {
            self.raw.flags |= sys::ONNXSTREAM_FLAG_PROFILE;
        } else {
            self.raw.flags &= !sys::ONNXSTREAM_FLAG_PROFILE;
        }
        self
    }

    /// Keep the thread pool's workers spinning between parallel sections instead of sleeping: a little
    /// faster when the model's threads have the cores to themselves, much slower when other processes
    /// compete for them. Off by default.
    pub fn spin_workers(mut self, on: bool) -> ModelOptions {
        if on {
            self.raw.flags |= sys::ONNXSTREAM_FLAG_SPIN_WORKERS;
        } else {
            self.raw.flags &= !sys::ONNXSTREAM_FLAG_SPIN_WORKERS;
        }
        self
    }

    /// Compute 8-bit weights in float32 (dequantized) even where the build has int8 arithmetic for them
    /// (XNNPACK's 2024 API). Off by default.
    pub fn dequantize_weights(mut self, on: bool) -> ModelOptions {
        if on {
            self.raw.flags |= sys::ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS;
        } else {
            self.raw.flags &= !sys::ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS;
        }
        self
    }

    /// Persistent prepared-weights cache file (built on the first run, memory-mapped afterwards).
    /// A path with an interior NUL byte makes [`Model::new`](crate::Model::new) fail with
    /// `InvalidArgument`.
    pub fn cache_path<P: AsRef<std::path::Path>>(mut self, path: P) -> ModelOptions {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_ref().as_os_str().as_bytes();
        self.cache_path = Some(
            std::ffi::CString::new(bytes).map_err(|_| path.as_ref().to_string_lossy().into_owned()),
        );
        self
    }
}

impl Default for ModelOptions {
    fn default() -> ModelOptions {
        ModelOptions::new()
    }
}
