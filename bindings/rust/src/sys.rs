//! Hand-written mirror of include/onnxstream.h. Kept private: the safe API is the interface.
//! The layout test at the bottom compares every struct size, field offset and constant with the C
//! compiler's view of the header (build.rs runs csrc/layout.c), so this file cannot drift silently.
#![allow(non_camel_case_types, dead_code)]

use std::os::raw::{c_char, c_int, c_void};

pub type onnxstream_status_t = c_int;
pub type onnxstream_dtype_t = c_int;
pub type onnxstream_log_level_t = c_int;
pub type onnxstream_profile_format_t = c_int;

pub const ONNXSTREAM_VERSION: u32 = 2600;

pub const ONNXSTREAM_OK: onnxstream_status_t = 0;
pub const ONNXSTREAM_ERR_INVALID_ARGUMENT: onnxstream_status_t = 1;
pub const ONNXSTREAM_ERR_INVALID_MODEL: onnxstream_status_t = 2;
pub const ONNXSTREAM_ERR_IO: onnxstream_status_t = 3;
pub const ONNXSTREAM_ERR_UNSUPPORTED: onnxstream_status_t = 4;
pub const ONNXSTREAM_ERR_OUT_OF_MEMORY: onnxstream_status_t = 5;
pub const ONNXSTREAM_ERR_CALLBACK: onnxstream_status_t = 6;
pub const ONNXSTREAM_ERR_CANCELLED: onnxstream_status_t = 7;
pub const ONNXSTREAM_ERR_BAD_STATE: onnxstream_status_t = 8;
pub const ONNXSTREAM_ERR_INTERNAL: onnxstream_status_t = 9;

pub const ONNXSTREAM_DTYPE_FLOAT32: onnxstream_dtype_t = 1;
pub const ONNXSTREAM_DTYPE_FLOAT16: onnxstream_dtype_t = 2;
pub const ONNXSTREAM_DTYPE_INT64: onnxstream_dtype_t = 3;
pub const ONNXSTREAM_DTYPE_UINT8: onnxstream_dtype_t = 4;
pub const ONNXSTREAM_DTYPE_INT8: onnxstream_dtype_t = 5;
pub const ONNXSTREAM_DTYPE_INT32: onnxstream_dtype_t = 6;
pub const ONNXSTREAM_DTYPE_BOOL: onnxstream_dtype_t = 7;
pub const ONNXSTREAM_DTYPE_FLOAT64: onnxstream_dtype_t = 8;
pub const ONNXSTREAM_DTYPE_INT16: onnxstream_dtype_t = 9;
pub const ONNXSTREAM_DTYPE_UINT16: onnxstream_dtype_t = 10;
pub const ONNXSTREAM_DTYPE_UINT32: onnxstream_dtype_t = 11;
pub const ONNXSTREAM_DTYPE_UINT64: onnxstream_dtype_t = 12;
pub const ONNXSTREAM_DTYPE_BFLOAT16: onnxstream_dtype_t = 13;
pub const ONNXSTREAM_DTYPE_FLOAT8E4M3FN: onnxstream_dtype_t = 14;
pub const ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ: onnxstream_dtype_t = 15;
pub const ONNXSTREAM_DTYPE_FLOAT8E5M2: onnxstream_dtype_t = 16;
pub const ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ: onnxstream_dtype_t = 17;
pub const ONNXSTREAM_DTYPE_INT4: onnxstream_dtype_t = 18;
pub const ONNXSTREAM_DTYPE_UINT4: onnxstream_dtype_t = 19;

pub const ONNXSTREAM_PROVIDER_AUTO: i32 = -1;
pub const ONNXSTREAM_PROVIDER_NOCACHE: i32 = 0;
pub const ONNXSTREAM_PROVIDER_PREFETCH: i32 = 1;
pub const ONNXSTREAM_PROVIDER_MMAP: i32 = 2;
pub const ONNXSTREAM_PROVIDER_RAM: i32 = 3;
pub const ONNXSTREAM_MEMORY_BALANCED: i32 = 0;
pub const ONNXSTREAM_MEMORY_MIN: i32 = 1;
pub const ONNXSTREAM_MEMORY_MAX_SPEED: i32 = 2;
pub const ONNXSTREAM_ATTENTION_AUTO: i32 = 0;
pub const ONNXSTREAM_ATTENTION_FULL: i32 = 1;
pub const ONNXSTREAM_ATTENTION_SLICED: i32 = 2;
pub const ONNXSTREAM_ATTENTION_FLASH: i32 = 3;

pub const ONNXSTREAM_FLAG_KEEP_ALL_OUTPUTS: u32 = 0x1;
pub const ONNXSTREAM_FLAG_NCHW_ONLY: u32 = 0x2;
pub const ONNXSTREAM_FLAG_PROFILE: u32 = 0x4;
pub const ONNXSTREAM_FLAG_SPIN_WORKERS: u32 = 0x8;
pub const ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS: u32 = 0x10;

pub const ONNXSTREAM_PROFILE_TRACE_JSON: onnxstream_profile_format_t = 0;
pub const ONNXSTREAM_PROFILE_SUMMARY: onnxstream_profile_format_t = 1;

pub const ONNXSTREAM_LOG_DEBUG: onnxstream_log_level_t = 0;
pub const ONNXSTREAM_LOG_INFO: onnxstream_log_level_t = 1;
pub const ONNXSTREAM_LOG_WARNING: onnxstream_log_level_t = 2;
pub const ONNXSTREAM_LOG_ERROR: onnxstream_log_level_t = 3;

#[repr(C)]
pub struct onnxstream_model_t {
    _opaque: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct onnxstream_model_options_t {
    pub struct_size: u32,
    pub threads: i32,
    pub provider: i32,
    pub flags: u32,
    pub prefetch_bytes: u64,
    pub memory_mode: i32,
    pub attention: i32,
    pub attention_slices: i32,
    pub reserved0: i32,
    pub weight_chunk_bytes: u64,
    pub cache_path: *const c_char,
    pub max_bytes: u64,
    pub arithmetic: i32,
    pub kept_kernel_bytes: u64,
}

#[repr(C)]
pub struct onnxstream_weight_request_t {
    pub struct_size: u32,
    pub file: *const c_char,
    pub dtype: onnxstream_dtype_t,
    pub rank: usize,
    pub shape: *const i64,
    pub byte_size: usize,
    pub error_message: *mut c_char,
    pub error_message_capacity: usize,
    pub bytes_produced: *mut usize,
}

pub type read_fn =
    unsafe extern "C" fn(*mut c_void, *const onnxstream_weight_request_t, *mut c_void) -> onnxstream_status_t;
pub type acquire_fn = unsafe extern "C" fn(
    *mut c_void,
    *const onnxstream_weight_request_t,
    *mut *const c_void,
    *mut *mut c_void,
) -> onnxstream_status_t;
pub type release_fn = unsafe extern "C" fn(*mut c_void, *mut c_void);
pub type prefetch_fn = unsafe extern "C" fn(*mut c_void, *const onnxstream_weight_request_t);
pub type destroy_fn = unsafe extern "C" fn(*mut c_void);

#[repr(C)]
pub struct onnxstream_weights_provider_t {
    pub struct_size: u32,
    pub read: Option<read_fn>,
    pub acquire: Option<acquire_fn>,
    pub release: Option<release_fn>,
    pub prefetch: Option<prefetch_fn>,
    pub destroy: Option<destroy_fn>,
}

#[repr(C)]
pub struct onnxstream_progress_t {
    pub struct_size: u32,
    pub op_index: usize,
    pub op_count: usize,
    pub op_name: *const c_char,
    pub op_type: *const c_char,
    pub elapsed_us: u64,
    pub current_bytes: u64,
    pub peak_bytes: u64,
}

pub type onnxstream_progress_fn = unsafe extern "C" fn(*mut c_void, *const onnxstream_progress_t) -> c_int;
pub type onnxstream_log_fn = unsafe extern "C" fn(*mut c_void, onnxstream_log_level_t, *const c_char);

#[repr(C)]
pub struct onnxstream_tensor_view_t {
    pub struct_size: u32,
    pub name: *const c_char,
    pub dtype: onnxstream_dtype_t,
    pub rank: usize,
    pub shape: *const i64,
    pub data: *const c_void,
    pub byte_size: usize,
}

#[repr(C)]
pub struct onnxstream_memory_stats_t {
    pub struct_size: u32,
    pub current_bytes: u64,
    pub peak_bytes: u64,
}

#[repr(C)]
pub struct onnxstream_run_stats_t {
    pub struct_size: u32,
    pub run_us: u64,
    pub weight_bytes_read: u64,
    pub weight_read_us: u64,
    pub weight_wait_us: u64,
    pub layout_transposes: u64,
    pub fp16_ops: u64,
    pub fp16_fallbacks: u64,
    pub arithmetic: i32,
    pub weight_bytes_copied: u64,
    pub int8_ops: u64,
    pub packed_weights_mapped: u64,
    pub packed_weights_stored: u64,
    pub kept_kernels: u64,
    pub kept_kernel_bytes: u64,
}

#[repr(C)]
pub struct onnxstream_op_profile_t {
    pub struct_size: u32,
    pub op_index: usize,
    pub line: usize,
    pub op_name: *const c_char,
    pub op_type: *const c_char,
    pub inputs: *const c_char,
    pub outputs: *const c_char,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub weight_wait_ns: u64,
    pub kernel_prepare_ns: u64,
    pub flops: u64,
    pub weight_bytes: u64,
    pub activation_bytes: u64,
    pub memory_bytes: u64,
}

#[repr(C)]
pub struct onnxstream_roofline_t {
    pub struct_size: u32,
    pub flops_per_s: f64,
    pub bytes_per_s: f64,
}

extern "C" {
    pub fn onnxstream_version() -> u32;
    pub fn onnxstream_version_string() -> *const c_char;
    pub fn onnxstream_status_name(status: onnxstream_status_t) -> *const c_char;
    pub fn onnxstream_dtype_name(dtype: onnxstream_dtype_t) -> *const c_char;
    pub fn onnxstream_dtype_size(dtype: onnxstream_dtype_t) -> usize;
    pub fn onnxstream_last_error() -> *const c_char;

    pub fn onnxstream_model_options_init(options: *mut onnxstream_model_options_t);
    pub fn onnxstream_model_create(
        options: *const onnxstream_model_options_t,
        out: *mut *mut onnxstream_model_t,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_destroy(model: *mut onnxstream_model_t);
    pub fn onnxstream_model_last_error(model: *const onnxstream_model_t) -> *const c_char;
    pub fn onnxstream_model_load(model: *mut onnxstream_model_t, path: *const c_char) -> onnxstream_status_t;
    pub fn onnxstream_model_load_string(
        model: *mut onnxstream_model_t,
        model_txt: *const c_char,
        weights_dir: *const c_char,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_add_output(
        model: *mut onnxstream_model_t,
        name: *const c_char,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_add_lora(
        model: *mut onnxstream_model_t,
        path: *const c_char,
        scale: f32,
        key_prefix: *const c_char,
        modules_taken: *mut usize,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_read_range_data(
        model: *mut onnxstream_model_t,
        path: *const c_char,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_write_range_data(
        model: *mut onnxstream_model_t,
        path: *const c_char,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_set_calibrate(model: *mut onnxstream_model_t, on: i32) -> onnxstream_status_t;

    pub fn onnxstream_model_set_weights_provider(
        model: *mut onnxstream_model_t,
        provider: *const onnxstream_weights_provider_t,
        user_data: *mut c_void,
    ) -> onnxstream_status_t;

    pub fn onnxstream_model_push_tensor(
        model: *mut onnxstream_model_t,
        name: *const c_char,
        dtype: onnxstream_dtype_t,
        rank: usize,
        shape: *const i64,
        data: *const c_void,
        byte_size: usize,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_set_progress_callback(
        model: *mut onnxstream_model_t,
        f: Option<onnxstream_progress_fn>,
        user_data: *mut c_void,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_set_log_callback(
        model: *mut onnxstream_model_t,
        f: Option<onnxstream_log_fn>,
        user_data: *mut c_void,
        min_level: onnxstream_log_level_t,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_run(model: *mut onnxstream_model_t) -> onnxstream_status_t;

    pub fn onnxstream_model_input_count(model: *const onnxstream_model_t) -> usize;
    pub fn onnxstream_model_get_input(
        model: *mut onnxstream_model_t,
        index: usize,
        view: *mut onnxstream_tensor_view_t,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_output_count(model: *const onnxstream_model_t) -> usize;
    pub fn onnxstream_model_get_output(
        model: *mut onnxstream_model_t,
        index: usize,
        view: *mut onnxstream_tensor_view_t,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_get_output_by_name(
        model: *mut onnxstream_model_t,
        name: *const c_char,
        view: *mut onnxstream_tensor_view_t,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_memory_stats(
        model: *mut onnxstream_model_t,
        stats: *mut onnxstream_memory_stats_t,
        reset_peak: c_int,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_run_stats(
        model: *mut onnxstream_model_t,
        stats: *mut onnxstream_run_stats_t,
    ) -> onnxstream_status_t;

    pub fn onnxstream_model_profile_op_count(model: *const onnxstream_model_t) -> usize;
    pub fn onnxstream_model_get_op_profile(
        model: *mut onnxstream_model_t,
        index: usize,
        op: *mut onnxstream_op_profile_t,
    ) -> onnxstream_status_t;
    pub fn onnxstream_model_render_profile(
        model: *mut onnxstream_model_t,
        format: onnxstream_profile_format_t,
        peak: *const onnxstream_roofline_t,
        text: *mut *const c_char,
        length: *mut usize,
    ) -> onnxstream_status_t;
    pub fn onnxstream_measure_roofline(threads: i32, out: *mut onnxstream_roofline_t) -> onnxstream_status_t;

    pub fn onnxstream_pack_weights(folder: *const c_char, remove_files: i32) -> onnxstream_status_t;
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::mem::{size_of, MaybeUninit};
    use std::ptr::addr_of;

    include!(concat!(env!("OUT_DIR"), "/c_layout.rs"));

    type Rows = BTreeMap<(String, String), u64>;

    macro_rules! rust_struct {
        ($rows:ident, $t:ident { $($f:ident),* $(,)? }) => {{
            $rows.insert((stringify!($t).to_string(), "sizeof".to_string()), size_of::<$t>() as u64);
            let u = MaybeUninit::<$t>::uninit();
            let base = u.as_ptr();
            $(
                // addr_of! never reads the (uninitialised) field.
                let off = unsafe { addr_of!((*base).$f) as usize - base as usize };
                $rows.insert((stringify!($t).to_string(), stringify!($f).to_string()), off as u64);
            )*
        }};
    }

    macro_rules! rust_consts {
        ($rows:ident, $($c:ident),* $(,)?) => {
            $( $rows.insert(("const".to_string(), stringify!($c).to_string()), $c as u64); )*
        };
    }

    fn rust_rows() -> Rows {
        let mut rows = Rows::new();
        rows.insert(("onnxstream_status_t".into(), "sizeof".into()), size_of::<onnxstream_status_t>() as u64);
        rows.insert(("onnxstream_dtype_t".into(), "sizeof".into()), size_of::<onnxstream_dtype_t>() as u64);
        rows.insert(
            ("onnxstream_log_level_t".into(), "sizeof".into()),
            size_of::<onnxstream_log_level_t>() as u64,
        );
        rows.insert(
            ("onnxstream_profile_format_t".into(), "sizeof".into()),
            size_of::<onnxstream_profile_format_t>() as u64,
        );
        rust_struct!(
            rows,
            onnxstream_model_options_t {
                struct_size,
                threads,
                provider,
                flags,
                prefetch_bytes,
                memory_mode,
                attention,
                attention_slices,
                reserved0,
                weight_chunk_bytes,
                cache_path,
                max_bytes,
                arithmetic,
                kept_kernel_bytes
            }
        );
        rust_struct!(
            rows,
            onnxstream_weight_request_t {
                struct_size,
                file,
                dtype,
                rank,
                shape,
                byte_size,
                error_message,
                error_message_capacity,
                bytes_produced
            }
        );
        rust_struct!(
            rows,
            onnxstream_weights_provider_t { struct_size, read, acquire, release, prefetch, destroy }
        );
        rust_struct!(
            rows,
            onnxstream_progress_t {
                struct_size,
                op_index,
                op_count,
                op_name,
                op_type,
                elapsed_us,
                current_bytes,
                peak_bytes
            }
        );
        rust_struct!(
            rows,
            onnxstream_tensor_view_t { struct_size, name, dtype, rank, shape, data, byte_size }
        );
        rust_struct!(rows, onnxstream_memory_stats_t { struct_size, current_bytes, peak_bytes });
        rust_struct!(
            rows,
            onnxstream_run_stats_t {
                struct_size,
                run_us,
                weight_bytes_read,
                weight_read_us,
                weight_wait_us,
                layout_transposes,
                fp16_ops,
                fp16_fallbacks,
                arithmetic,
                weight_bytes_copied,
                int8_ops,
                packed_weights_mapped,
                packed_weights_stored,
                kept_kernels,
                kept_kernel_bytes
            }
        );
        rust_struct!(
            rows,
            onnxstream_op_profile_t {
                struct_size,
                op_index,
                line,
                op_name,
                op_type,
                inputs,
                outputs,
                start_ns,
                duration_ns,
                weight_wait_ns,
                kernel_prepare_ns,
                flops,
                weight_bytes,
                activation_bytes,
                memory_bytes
            }
        );
        rust_struct!(rows, onnxstream_roofline_t { struct_size, flops_per_s, bytes_per_s });
        rust_consts!(
            rows,
            ONNXSTREAM_VERSION,
            ONNXSTREAM_OK,
            ONNXSTREAM_ERR_INVALID_ARGUMENT,
            ONNXSTREAM_ERR_INVALID_MODEL,
            ONNXSTREAM_ERR_IO,
            ONNXSTREAM_ERR_UNSUPPORTED,
            ONNXSTREAM_ERR_OUT_OF_MEMORY,
            ONNXSTREAM_ERR_CALLBACK,
            ONNXSTREAM_ERR_CANCELLED,
            ONNXSTREAM_ERR_BAD_STATE,
            ONNXSTREAM_ERR_INTERNAL,
            ONNXSTREAM_DTYPE_FLOAT32,
            ONNXSTREAM_DTYPE_FLOAT16,
            ONNXSTREAM_DTYPE_INT64,
            ONNXSTREAM_DTYPE_UINT8,
            ONNXSTREAM_DTYPE_INT8,
            ONNXSTREAM_DTYPE_INT32,
            ONNXSTREAM_DTYPE_BOOL,
            ONNXSTREAM_DTYPE_FLOAT64,
            ONNXSTREAM_DTYPE_INT16,
            ONNXSTREAM_DTYPE_UINT16,
            ONNXSTREAM_DTYPE_UINT32,
            ONNXSTREAM_DTYPE_UINT64,
            ONNXSTREAM_DTYPE_BFLOAT16,
            ONNXSTREAM_DTYPE_FLOAT8E4M3FN,
            ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ,
            ONNXSTREAM_DTYPE_FLOAT8E5M2,
            ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ,
            ONNXSTREAM_DTYPE_INT4,
            ONNXSTREAM_DTYPE_UINT4,
            ONNXSTREAM_PROVIDER_AUTO,
            ONNXSTREAM_MEMORY_BALANCED,
            ONNXSTREAM_MEMORY_MIN,
            ONNXSTREAM_MEMORY_MAX_SPEED,
            ONNXSTREAM_ATTENTION_AUTO,
            ONNXSTREAM_ATTENTION_FULL,
            ONNXSTREAM_ATTENTION_SLICED,
            ONNXSTREAM_ATTENTION_FLASH,
            ONNXSTREAM_PROVIDER_NOCACHE,
            ONNXSTREAM_PROVIDER_PREFETCH,
            ONNXSTREAM_PROVIDER_MMAP,
            ONNXSTREAM_PROVIDER_RAM,
            ONNXSTREAM_FLAG_KEEP_ALL_OUTPUTS,
            ONNXSTREAM_FLAG_NCHW_ONLY,
            ONNXSTREAM_FLAG_PROFILE,
            ONNXSTREAM_FLAG_SPIN_WORKERS,
            ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS,
            ONNXSTREAM_PROFILE_TRACE_JSON,
            ONNXSTREAM_PROFILE_SUMMARY,
            ONNXSTREAM_LOG_DEBUG,
            ONNXSTREAM_LOG_INFO,
            ONNXSTREAM_LOG_WARNING,
            ONNXSTREAM_LOG_ERROR,
        );
        rows
    }

    #[test]
    fn layout_matches_c_header() {
        let c_rows: Rows = match C_LAYOUT {
            Ok(rows) => rows.iter().map(|&(t, f, v)| ((t.to_string(), f.to_string()), v)).collect(),
            Err(why) => panic!("build.rs could not probe the C layout: {}", why),
        };
        let rust = rust_rows();
        let mut problems = Vec::new();
        for (key, c_value) in &c_rows {
            match rust.get(key) {
                Some(r) if r == c_value => {}
                Some(r) => problems.push(format!("{}.{}: C says {}, Rust says {}", key.0, key.1, c_value, r)),
                None => {
                    problems.push(format!("{}.{}: in the C probe but not mirrored in sys.rs", key.0, key.1))
                }
            }
        }
        for key in rust.keys() {
            if !c_rows.contains_key(key) {
                problems.push(format!("{}.{}: in sys.rs but not in csrc/layout.c", key.0, key.1));
            }
        }
        assert!(problems.is_empty(), "FFI layout drift:\n  {}", problems.join("\n  "));
    }

    #[test]
    fn options_init_fills_a_rust_owned_struct() {
        // Poison first: bytes the C side does not write (a Rust struct larger than C's) stay 0xAB.
        let mut raw = MaybeUninit::<onnxstream_model_options_t>::uninit();
        unsafe {
            std::ptr::write_bytes(raw.as_mut_ptr() as *mut u8, 0xAB, size_of::<onnxstream_model_options_t>());
            onnxstream_model_options_init(raw.as_mut_ptr());
        }
        let o = unsafe { raw.assume_init() };
        assert_eq!(o.struct_size as usize, size_of::<onnxstream_model_options_t>());
        assert_eq!(o.threads, 0);
        assert_eq!(o.provider, ONNXSTREAM_PROVIDER_AUTO);
        assert_eq!(o.flags, 0);
        assert_eq!(o.prefetch_bytes, 0);
        assert_eq!(o.memory_mode, ONNXSTREAM_MEMORY_BALANCED);
        assert_eq!(o.attention, ONNXSTREAM_ATTENTION_AUTO);
        assert_eq!(o.attention_slices, 0);
        assert_eq!(o.reserved0, 0);
        assert_eq!(o.weight_chunk_bytes, 0);
        assert!(o.cache_path.is_null());
        assert_eq!(o.kept_kernel_bytes, 0);
    }

    #[test]
    fn runtime_version_matches_header() {
        assert_eq!(unsafe { onnxstream_version() }, ONNXSTREAM_VERSION);
    }
}
