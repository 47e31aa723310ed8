//! Packing a model folder's weight files into one `model.safetensors`.

use std::path::Path;
use std::ptr;

use crate::error::{check, Result};
use crate::model::path_cstring;
use crate::sys;

/// Packs the weight files of the model folder `folder` (OnnxStream's or onnxstream-convert's) into one
/// `folder/model.safetensors`: every `.bin` file model.txt references and every per-channel scales file,
/// each stored under its file name without `.bin`. Models load from such a folder with every built-in
/// provider; a weight is looked up in `model.safetensors` first, then as a file. The store is written
/// under a temporary name and renamed into place; only then, with `remove_files`, are the packed files
/// deleted. model.txt is not changed. Runs in the calling thread.
///
/// Errors: `InvalidArgument` when the folder already has a `model.safetensors` (or the path contains a
/// NUL byte), `InvalidModel` when model.txt does not parse, `Io` when model.txt or a weight file is
/// missing, a weight file's size does not match model.txt, or the store cannot be written.
pub fn pack_weights(folder: impl AsRef<Path>, remove_files: bool) -> Result<()> {
    let folder = path_cstring(folder.as_ref())?;
    // Safety: a NUL-terminated path; on failure the message is in the thread's last error.
    check(unsafe { sys::onnxstream_pack_weights(folder.as_ptr(), remove_files as i32) }, ptr::null())
}
