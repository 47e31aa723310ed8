/*
 * onnxstream.h - the public, stable C API of libonnxstream.
 *
 * onnxstream runs neural networks stored in OnnxStream's model.txt format (one operation per line plus
 * one .bin file per weight) op by op, fetching each op's weights just before it runs and freeing every
 * intermediate tensor after its last use, so peak memory is about one op's weights plus live activations.
 *
 * Conventions used throughout this header:
 *   - Every fallible function returns onnxstream_status_t; ONNXSTREAM_OK (0) means success. On failure a
 *     human readable message is available from onnxstream_model_last_error() (for calls that have a model)
 *     or onnxstream_last_error() (thread-local; always set, including for calls that failed before a
 *     model existed).
 *   - No function aborts, exits or prints; nothing is written to stdout/stderr unless a log callback asks.
 *   - Threads: different handles are independent and may be used concurrently from different threads.
 *     One handle is used by one thread at a time: while a call on a model is in progress (typically
 *     onnxstream_model_run), a call on the same model from another thread is refused with
 *     ONNXSTREAM_ERR_BAD_STATE ("another thread is running this model"; the message goes to that thread's
 *     onnxstream_last_error() only, the model's own last error is left alone) instead of corrupting it.
 *     Callbacks of a run (progress, log, weights provider) run while the model is busy: from the running
 *     thread they may read (get_output, get_input, memory_stats, run_stats) but a call that changes the
 *     model (run, load, push_tensor, set_*, add_output, read_range_data) is refused with BAD_STATE too.
 *     onnxstream_model_destroy, onnxstream_model_last_error and the *_count functions are not checked:
 *     never call them while another thread uses the model.
 *   - Structs that may grow start with `uint32_t struct_size`; fill it with sizeof(struct) (the *_init
 *     functions do this). The library reads only the fields that fit in struct_size.
 */
#ifndef ONNXSTREAM_H
#define ONNXSTREAM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONNXSTREAM_VERSION_MAJOR 0
#define ONNXSTREAM_VERSION_MINOR 26
#define ONNXSTREAM_VERSION_PATCH 0
#define ONNXSTREAM_VERSION \
    (ONNXSTREAM_VERSION_MAJOR * 10000 + ONNXSTREAM_VERSION_MINOR * 100 + ONNXSTREAM_VERSION_PATCH)

#if defined(_WIN32)
#define ONNXSTREAM_API __declspec(dllexport)
#elif defined(__GNUC__)
#define ONNXSTREAM_API __attribute__((visibility("default")))
#else
#define ONNXSTREAM_API
#endif

#if defined(__GNUC__)
#define ONNXSTREAM_NODISCARD __attribute__((warn_unused_result))
#else
#define ONNXSTREAM_NODISCARD
#endif

/** Status codes. Values are fixed and only ever appended to. */
typedef enum onnxstream_status {
    ONNXSTREAM_OK = 0,
    ONNXSTREAM_ERR_INVALID_ARGUMENT = 1, /**< a NULL pointer, a bad size, an unknown name or option */
    ONNXSTREAM_ERR_INVALID_MODEL = 2,    /**< model.txt does not parse, or shapes/dtypes do not check */
    ONNXSTREAM_ERR_IO = 3,               /**< a file is missing, unreadable, truncated or too large */
    ONNXSTREAM_ERR_UNSUPPORTED = 4,      /**< an operator or attribute value this engine does not run */
    ONNXSTREAM_ERR_OUT_OF_MEMORY = 5,
    ONNXSTREAM_ERR_CALLBACK = 6,   /**< a host callback (weights provider) returned an error */
    ONNXSTREAM_ERR_CANCELLED = 7,  /**< the progress callback asked to stop */
    ONNXSTREAM_ERR_BAD_STATE = 8,  /**< the call is not valid now (e.g. run before load) */
    ONNXSTREAM_ERR_INTERNAL = 9    /**< a bug in onnxstream or a kernel library; please report it */
} onnxstream_status_t;

/** Element types. Values are fixed and only ever appended to. */
typedef enum onnxstream_dtype {
    ONNXSTREAM_DTYPE_FLOAT32 = 1,
    ONNXSTREAM_DTYPE_FLOAT16 = 2,
    ONNXSTREAM_DTYPE_INT64 = 3,
    ONNXSTREAM_DTYPE_UINT8 = 4,
    ONNXSTREAM_DTYPE_INT8 = 5,
    ONNXSTREAM_DTYPE_INT32 = 6,
    ONNXSTREAM_DTYPE_BOOL = 7, /**< one byte per element, 0 or 1 */
    ONNXSTREAM_DTYPE_FLOAT64 = 8, /**< since 0.13 */
    ONNXSTREAM_DTYPE_INT16 = 9,   /**< since 0.13 */
    ONNXSTREAM_DTYPE_UINT16 = 10, /**< since 0.13 */
    ONNXSTREAM_DTYPE_UINT32 = 11, /**< since 0.13 */
    ONNXSTREAM_DTYPE_UINT64 = 12, /**< since 0.13 */
    ONNXSTREAM_DTYPE_BFLOAT16 = 13, /**< since 0.13; the top 16 bits of a float32 */
    ONNXSTREAM_DTYPE_FLOAT8E4M3FN = 14,   /**< since 0.14; ONNX's 8-bit floats, one byte each */
    ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ = 15, /**< since 0.14 */
    ONNXSTREAM_DTYPE_FLOAT8E5M2 = 16,     /**< since 0.14 */
    ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ = 17, /**< since 0.14 */
    ONNXSTREAM_DTYPE_INT4 = 18,           /**< since 0.14; one value per byte, -8..7 sign-extended */
    ONNXSTREAM_DTYPE_UINT4 = 19           /**< since 0.14; one value per byte, 0..15 */
} onnxstream_dtype_t;

/** Built-in weights providers. */
typedef enum onnxstream_provider_kind {
    ONNXSTREAM_PROVIDER_AUTO = -1,    /**< chosen by the memory mode: min and balanced nocache,
                                           max-speed ram (default) */
    ONNXSTREAM_PROVIDER_NOCACHE = 0,  /**< read each weight file when its op runs, free it after */
    ONNXSTREAM_PROVIDER_PREFETCH = 1, /**< like nocache, but a background thread reads ahead */
    ONNXSTREAM_PROVIDER_MMAP = 2,     /**< map weight files; pages are file-backed and shared */
    ONNXSTREAM_PROVIDER_RAM = 3       /**< read once, keep every weight and prepared kernel (packed
                                           XNNPACK weights) in memory for later runs: fastest repeats */
} onnxstream_provider_kind_t;

/**
 * Memory modes: one setting for how much memory a run may use to go faster. docs/memory-and-speed.md
 * describes each and docs/benchmarks.md gives measured figures.
 */
typedef enum onnxstream_memory_mode {
    /** Default. Weights are read when their op runs (no read-ahead thread), in output-channel chunks of
        4 MiB; attention over key blocks (FlashAttention-style); up to 32 MiB of freed big buffers kept
        for reuse, and a run's activation pages kept for the same model's next run (the peak does not
        move; between runs the process holds them). */
    ONNXSTREAM_MEMORY_BALANCED = 0,
    /** Smallest working set (a 512 MB board): no read-ahead, weights over 4 MiB in chunks, attention over
        key blocks (FlashAttention-style) with score tiles of at most 1 MiB; 12 MiB of freed big buffers
        kept for reuse. */
    ONNXSTREAM_MEMORY_MIN = 1,
    /** Keep every weight and prepared kernel in RAM between runs (like OnnxStream's ops cache); weights in
        4 MiB chunks (faster: a chunk's packed weights stay in the CPU caches); attention without a memory
        bound; 256 MiB of freed big buffers kept for reuse, and a run's activation pages kept for the
        same model's next run. */
    ONNXSTREAM_MEMORY_MAX_SPEED = 2
} onnxstream_memory_mode_t;

/** How attention (the ScaledDotProductAttention op onnxstream-convert writes) is computed. */
typedef enum onnxstream_attention {
    ONNXSTREAM_ATTENTION_AUTO = 0,   /**< the fastest kind that fits the memory mode's budget (default) */
    ONNXSTREAM_ATTENTION_FULL = 1,   /**< whole score matrix per head */
    ONNXSTREAM_ATTENTION_SLICED = 2, /**< OnnxStream's attention slicing: Q split into row parts */
    ONNXSTREAM_ATTENTION_FLASH = 3   /**< online softmax over key blocks, bounded score tiles */
} onnxstream_attention_t;

/**
 * Arithmetic of float16 models (since 0.4). float16 tensors are always stored as float16; this chooses how
 * Conv and MatMul/Gemm with a weight compute on float16 activations. Other ops always compute in float32.
 */
typedef enum onnxstream_arithmetic {
    /** Default: FP16 when the CPU has native float16 arithmetic (ARMv8.2 FP16, per cpuinfo) and the model
        has float16 weights; otherwise FP32. x86 is always FP32 (F16C only converts). */
    ONNXSTREAM_ARITHMETIC_AUTO = 0,
    ONNXSTREAM_ARITHMETIC_FP32 = 1, /**< widen float16 to float32, compute, narrow the result */
    /** XNNPACK's float16 kernels, no widening copies. On a CPU where XNNPACK has none, each op computes in
        float32 instead (logged once as a warning); never an error. */
    ONNXSTREAM_ARITHMETIC_FP16 = 2
} onnxstream_arithmetic_t;

typedef struct onnxstream_model onnxstream_model_t;

/* ------------------------------------------------------------------------------------------------ */
/* Version and errors                                                                                */

/** Runtime version, encoded like ONNXSTREAM_VERSION; compare with the macro to detect header skew. */
ONNXSTREAM_API uint32_t onnxstream_version(void);
/** Runtime version as "MAJOR.MINOR.PATCH". Static storage, never NULL. */
ONNXSTREAM_API const char *onnxstream_version_string(void);
/**
 * The kernel library this runtime was built against and the generation of its API, e.g.
 * "XNNPACK 2022-02 API (create, setup)" (Debian 12) or "XNNPACK 2024-11 API (create, reshape, setup)"
 * (Debian 13). Static storage, never NULL.
 */
ONNXSTREAM_API const char *onnxstream_kernel_library(void);
/** Name of a status ("ONNXSTREAM_ERR_IO"); "ONNXSTREAM_UNKNOWN_STATUS" for values this version lacks. */
ONNXSTREAM_API const char *onnxstream_status_name(onnxstream_status_t status);
/** Name of a dtype as written in model.txt ("float32"); "unknown" for values this version lacks. */
ONNXSTREAM_API const char *onnxstream_dtype_name(onnxstream_dtype_t dtype);
/** Size in bytes of one element of dtype, or 0 for unknown values. */
ONNXSTREAM_API size_t onnxstream_dtype_size(onnxstream_dtype_t dtype);
/**
 * Message of the last failed call made on this thread (any function, with or without a model).
 * Never NULL ("" if no call failed yet). Valid until the next failing call on this thread.
 */
ONNXSTREAM_API const char *onnxstream_last_error(void);

/* ------------------------------------------------------------------------------------------------ */
/* Options                                                                                           */

/** Option flags (bit set in onnxstream_model_options_t.flags). */
#define ONNXSTREAM_FLAG_KEEP_ALL_OUTPUTS 0x1u /**< reserved for future use; must be 0 for now */
/** Keep every activation NCHW (no channels-last layout plan between convolutions); for comparisons. */
#define ONNXSTREAM_FLAG_NCHW_ONLY 0x2u
/** Since 0.6: record a per-op profile of every run (onnxstream_model_get_op_profile,
    onnxstream_model_render_profile). It costs two clock reads per op; what does not change between runs
    (names, shapes, FLOPs) is worked out once per input shape set, before the run's tensors exist, so a
    profiled run takes the memory an unprofiled one does. Without the flag the engine records nothing. */
#define ONNXSTREAM_FLAG_PROFILE 0x4u
/** Since 0.6: keep the thread pool's workers spinning between parallel sections instead of sleeping. A few
    percent faster on some machines when the model's threads have the cores to themselves, slower on others
    (a virtual machine); much slower when other processes compete for them (then every section waits for a
    worker the scheduler has not run). */
#define ONNXSTREAM_FLAG_SPIN_WORKERS 0x8u
/** Since 0.9: compute every 8-bit weight by dequantizing it to float32 (W8A32), even where the kernel
    library has dynamically quantized int8 kernels (XNNPACK's 2024 API: per-channel int8 MatMul, Gemm and
    Conv weights then compute in int8 with activations quantized per row when the op runs). For
    comparisons. */
#define ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS 0x10u

typedef struct onnxstream_model_options {
    uint32_t struct_size; /**< sizeof(onnxstream_model_options_t); set by onnxstream_model_options_init */
    int32_t threads;      /**< worker threads; 0 = one per core (default) */
    int32_t provider;     /**< an onnxstream_provider_kind_t; default ONNXSTREAM_PROVIDER_AUTO */
    uint32_t flags;       /**< ONNXSTREAM_FLAG_* bits; default 0 */
    uint64_t prefetch_bytes; /**< read-ahead budget of the prefetch provider; 0 = from the memory mode
                                  (balanced 64 MiB, min 16 MiB) */
    /* Since 0.2: */
    int32_t memory_mode;     /**< an onnxstream_memory_mode_t; default ONNXSTREAM_MEMORY_BALANCED */
    int32_t attention;       /**< an onnxstream_attention_t; default ONNXSTREAM_ATTENTION_AUTO */
    int32_t attention_slices; /**< SLICED: number of Q parts; 0 = from the memory mode's budget */
    int32_t reserved0;       /**< must be 0 */
    uint64_t weight_chunk_bytes; /**< stream weights bigger than this in chunks of at most this size;
                                      0 = from the memory mode; UINT64_MAX = never */
    /** Persistent cache of prepared weights (a file path, NUL-terminated, copied): built on the first run,
        memory-mapped and shared by later runs and processes; rebuilt when the model or engine changes.
        NULL = no cache. */
    const char *cache_path;
    /* Since 0.4: */
    /** Memory budget of the model's tracked tensor memory (0 = no limit, the default): an allocation that
        would take the tracked bytes above it fails the call with ONNXSTREAM_ERR_OUT_OF_MEMORY and a message
        naming the op, the request, the bytes in use and the limit; the model stays usable. Counted: every
        tensor the engine allocates (activations, pushed inputs, the outputs of the last run, weights read
        into RAM by the built-in providers or a host provider's read callback, chunks of streamed weights,
        layout copies, op scratch buffers, the weights the RAM provider keeps between runs). Not counted:
        memory the engine does not own (mmap provider pages, the persistent cache's mapping, zero-copy
        buffers of a host provider's acquire), XNNPACK's own buffers (packed weights, indirection buffers,
        workspaces: XNNPACK has one process-wide allocator, not one per model) and small bookkeeping
        (graph, plan, std containers). Change it later with onnxstream_model_set_max_bytes. */
    uint64_t max_bytes;
    int32_t arithmetic; /**< an onnxstream_arithmetic_t; default ONNXSTREAM_ARITHMETIC_AUTO */
    /* Since 0.20: */
    /** Memory for prepared kernels kept between runs (XNNPACK operators of Conv: indirection buffers,
        workspaces, packed weights that do not come from a packed-weights file), chosen after the first run
        by the time they save per byte (docs/memory-and-speed.md). 0 = from the memory mode (balanced
        24 MiB, min none); UINT64_MAX = none. Ignored by the ram provider (max-speed), which keeps every
        op's, and with a host weights provider, which keeps none. */
    uint64_t kept_kernel_bytes;
} onnxstream_model_options_t;

/** Fill *options with defaults and struct_size. Safe to call with NULL (does nothing). */
ONNXSTREAM_API void onnxstream_model_options_init(onnxstream_model_options_t *options);

/* ------------------------------------------------------------------------------------------------ */
/* Model lifecycle                                                                                   */

/**
 * Create an empty model. options may be NULL (defaults). On success *out receives the handle, which
 * must be released with onnxstream_model_destroy.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT out is NULL, options->struct_size is 0, or an option is bad.
 * @retval ONNXSTREAM_ERR_OUT_OF_MEMORY
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_create(const onnxstream_model_options_t *options, onnxstream_model_t **out);

/** Destroy a model and everything it owns (outputs views become invalid). NULL is a no-op. */
ONNXSTREAM_API void onnxstream_model_destroy(onnxstream_model_t *model);

/**
 * Message of the last failed call on this model ("" if none). Valid until the next call on the model.
 * Returns "" for a NULL model.
 */
ONNXSTREAM_API const char *onnxstream_model_last_error(const onnxstream_model_t *model);

/**
 * Load a model from a folder containing model.txt, or from the path of a model.txt file; weight files
 * are looked up next to model.txt. Parses and checks the whole file; with a file-based provider also
 * checks that every weight file exists with the declared size. A range_data.txt next to model.txt is read
 * too (see onnxstream_model_read_range_data; its errors fail the load).
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT model or path is NULL.
 * @retval ONNXSTREAM_ERR_IO               model.txt or a weight file is missing or has the wrong size.
 * @retval ONNXSTREAM_ERR_INVALID_MODEL    a line does not parse (message names file:line:column).
 * @retval ONNXSTREAM_ERR_UNSUPPORTED      an operator type is unknown to this engine.
 * @retval ONNXSTREAM_ERR_BAD_STATE        a model was already loaded into this handle.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_load(onnxstream_model_t *model, const char *path);

/**
 * Load a model from model.txt text held in memory. Weight file names are resolved against
 * weights_dir (may be NULL when a custom weights provider serves every weight).
 * Same statuses as onnxstream_model_load.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_load_string(onnxstream_model_t *model, const char *model_txt, const char *weights_dir);

/**
 * Keep a tensor as an output even though later ops consume it. Call before the run; name may be the
 * escaped model.txt spelling ("input_2E_1") or the original one ("input.1").
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL arguments or no tensor of that name.
 * @retval ONNXSTREAM_ERR_BAD_STATE        no model loaded yet.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_add_output(onnxstream_model_t *model, const char *name);

/**
 * Apply a LoRA while the weights stream (since 0.11): every MatMul, Gemm or Conv weight W that a module of
 * the safetensors file at path names is used as W + scale * (alpha / rank) * up . down, computed when W
 * (or a chunk of its rows) is fetched, so no merged copy exists in memory or on disk. Takes the modules
 * whose keys start with key_prefix ("lora_unet_", "lora_te_", "unet.", ...; NULL or "" for all): up/down
 * pairs in kohya/A1111 (.lora_up.weight, .lora_down.weight, .alpha) or diffusers/PEFT (.lora_B.weight,
 * .lora_A.weight) form, F32, F16 or BF16. docs/lora.md says how keys match layers. Call between runs;
 * LoRAs added one after another add up. Takes effect from the next run.
 * @param modules_taken when not NULL, receives the number of modules taken (0 when none has the prefix).
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL model or path; a module without its up or down, with shapes
 *                                         that do not fit its weight, or matching no layer (one message lists
 *                                         them; nothing is added then).
 * @retval ONNXSTREAM_ERR_IO               the file cannot be read.
 * @retval ONNXSTREAM_ERR_INVALID_MODEL    a malformed safetensors header.
 * @retval ONNXSTREAM_ERR_UNSUPPORTED      LoHa/LoKr/DoRA tensors, or a module on an 8-bit quantized weight.
 * @retval ONNXSTREAM_ERR_BAD_STATE        no model loaded yet, or another thread is using the model.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_add_lora(onnxstream_model_t *model, const char *path, float scale, const char *key_prefix,
                          size_t *modules_taken);

/**
 * Change the model's max_bytes (see onnxstream_model_options_t.max_bytes; 0 = no limit) for the following
 * calls. Lowering it below the bytes in use frees nothing; it only makes later allocations fail. (Since 0.4.)
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT model is NULL.
 * @retval ONNXSTREAM_ERR_BAD_STATE        another thread is using the model.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_set_max_bytes(onnxstream_model_t *model, uint64_t max_bytes);

/* ------------------------------------------------------------------------------------------------ */
/* Static W8A8: activation ranges and calibration (since 0.3)                                         */

/**
 * Read activation ranges (OnnxStream's range_data.txt: one `name,min,max` line per range, name = the op
 * producing the tensor, or a graph input) and use them: Conv / MatMul / Gemm ops with a per-tensor uint8
 * weight and ranges for their input and output then compute in uint8 (static W8A8). A model folder's
 * range_data.txt is read automatically by onnxstream_model_load. Replaces ranges read before.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL arguments, or a name that is neither an op nor an input.
 * @retval ONNXSTREAM_ERR_IO               the file cannot be read.
 * @retval ONNXSTREAM_ERR_INVALID_MODEL    a malformed line, a non-finite value or min > max (file:line).
 * @retval ONNXSTREAM_ERR_BAD_STATE        no model loaded yet.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_read_range_data(onnxstream_model_t *model, const char *path);

/**
 * Write the model's activation ranges (while calibrating: the ranges recorded so far) to path, atomically
 * (temporary file + rename). @retval ONNXSTREAM_ERR_IO, ONNXSTREAM_ERR_BAD_STATE, ONNXSTREAM_ERR_INVALID_ARGUMENT.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_write_range_data(onnxstream_model_t *model, const char *path);

/**
 * Calibration on (nonzero) or off. While on, runs compute in float and record, for every tensor a Conv /
 * MatMul / Gemm reads (input 0) or writes, its 0.01 % and 99.99 % quantiles, merged over runs (min of
 * mins, max of maxes); switching on starts from no ranges; switching off makes later runs use the
 * recorded ranges (write them with onnxstream_model_write_range_data).
 * @retval ONNXSTREAM_ERR_BAD_STATE no model loaded yet.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_set_calibrate(onnxstream_model_t *model, int32_t on);

/* ------------------------------------------------------------------------------------------------ */
/* Weights providers                                                                                 */

/** What a weights provider is asked for. Valid only during the callback. */
typedef struct onnxstream_weight_request {
    uint32_t struct_size;
    const char *file;         /**< weight file name as written in model.txt (unescaped form is not used) */
    onnxstream_dtype_t dtype; /**< element type of the file's contents */
    size_t rank;
    const int64_t *shape;     /**< rank dimensions */
    size_t byte_size;         /**< exact number of bytes expected */
    char *error_message;      /**< the callback may write a NUL-terminated reason here on failure */
    size_t error_message_capacity;
    /* Since 0.4 (present when struct_size covers it): */
    /** Where read or acquire may store how many bytes it actually produced; preset to byte_size. A value
        other than byte_size (a short read, a buffer of the wrong size) fails the fetch with
        ONNXSTREAM_ERR_CALLBACK naming the weight file, the bytes expected and the bytes produced. */
    size_t *bytes_produced;
} onnxstream_weight_request_t;

/**
 * A host-implemented weights source. The model copies this struct, so it may live on the stack.
 * Callbacks are called from the thread that runs the model, except prefetch, which may be called from
 * the model's prefetch thread; for one model they are never called concurrently.
 * A non-OK return fails the run with ONNXSTREAM_ERR_CALLBACK and a message naming the weight file and
 * including req->error_message; the model stays usable.
 */
typedef struct onnxstream_weights_provider {
    uint32_t struct_size; /**< sizeof(onnxstream_weights_provider_t) */
    /** Required: copy exactly req->byte_size bytes into dst. */
    onnxstream_status_t (*read)(void *user_data, const onnxstream_weight_request_t *req, void *dst);
    /**
     * Optional zero-copy path: set *data to req->byte_size readable bytes that stay valid until
     * release(user_data, *token) is called (after the op that uses them). When acquire is set, read
     * is not used.
     */
    onnxstream_status_t (*acquire)(void *user_data, const onnxstream_weight_request_t *req,
                                   const void **data, void **token);
    void (*release)(void *user_data, void *token);
    /** Optional hint: this weight will be requested soon (called in execution order). */
    void (*prefetch)(void *user_data, const onnxstream_weight_request_t *req);
    /** Optional: called exactly once when the model no longer needs user_data. */
    void (*destroy)(void *user_data);
} onnxstream_weights_provider_t;

/**
 * Serve every weight through host callbacks instead of the built-in provider. May be called before or
 * after load, not during a run. Replacing a provider calls the old one's destroy.
 * If this call fails, the provider is not taken and destroy is not called.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT model/provider NULL, struct_size 0, read and acquire both
 *         NULL, or acquire without release.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t onnxstream_model_set_weights_provider(
    onnxstream_model_t *model, const onnxstream_weights_provider_t *provider, void *user_data);

/* ------------------------------------------------------------------------------------------------ */
/* Tensors and running                                                                               */

/**
 * Set a graph input. The data is copied; byte_size must equal dtype size x product(shape), and shape
 * and dtype must match the model's declaration of the input when one exists (any size in a dimension
 * declared '?': the next run plans the model for the pushed shapes, since 0.12). name may be escaped or
 * original. Pushed inputs stay set for later runs until pushed again.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL pointers, unknown input name, bad dtype, shape or size.
 * @retval ONNXSTREAM_ERR_BAD_STATE        no model loaded.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_push_tensor(onnxstream_model_t *model, const char *name, onnxstream_dtype_t dtype,
                             size_t rank, const int64_t *shape, const void *data, size_t byte_size);

/** Progress report passed to the progress callback. Valid only during the callback. */
typedef struct onnxstream_progress {
    uint32_t struct_size;
    size_t op_index;     /**< index of the op that just finished (0-based) */
    size_t op_count;
    const char *op_name; /**< as written in model.txt */
    const char *op_type;
    uint64_t elapsed_us; /**< time spent in this op, including weight fetch */
    uint64_t current_bytes; /**< tensor bytes alive after the op */
    uint64_t peak_bytes;    /**< tensor high-water mark of this run so far */
} onnxstream_progress_t;

/** Called after every op. Return nonzero to cancel the run (ONNXSTREAM_ERR_CANCELLED). */
typedef int (*onnxstream_progress_fn)(void *user_data, const onnxstream_progress_t *progress);

/** Set (or clear with fn = NULL) the progress callback. @retval ONNXSTREAM_ERR_INVALID_ARGUMENT */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_set_progress_callback(onnxstream_model_t *model, onnxstream_progress_fn fn, void *user_data);

typedef enum onnxstream_log_level {
    ONNXSTREAM_LOG_DEBUG = 0,
    ONNXSTREAM_LOG_INFO = 1,
    ONNXSTREAM_LOG_WARNING = 2,
    ONNXSTREAM_LOG_ERROR = 3
} onnxstream_log_level_t;

typedef void (*onnxstream_log_fn)(void *user_data, onnxstream_log_level_t level, const char *message);

/** Route this model's diagnostics at min_level and above to fn (NULL = silent, the default). */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t onnxstream_model_set_log_callback(
    onnxstream_model_t *model, onnxstream_log_fn fn, void *user_data, onnxstream_log_level_t min_level);

/**
 * Run the model on the pushed inputs. Checks every input is present and every shape/dtype in the graph
 * before the first op runs. On failure (including cancellation) the model stays usable: intermediate
 * tensors are freed and a later run starts from scratch.
 * @retval ONNXSTREAM_ERR_BAD_STATE        no model loaded, or an input was not pushed.
 * @retval ONNXSTREAM_ERR_INVALID_MODEL    shape/dtype check failed (message names model.txt line).
 * @retval ONNXSTREAM_ERR_IO / _CALLBACK   a weight could not be fetched.
 * @retval ONNXSTREAM_ERR_CANCELLED        the progress callback returned nonzero.
 * @retval ONNXSTREAM_ERR_UNSUPPORTED      an attribute combination this engine does not run.
 * @retval ONNXSTREAM_ERR_OUT_OF_MEMORY    memory ran out, or the run would pass max_bytes.
 * @retval ONNXSTREAM_ERR_BAD_STATE        also: another thread is running this model, or called from a
 *                                         callback of this model's run.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t onnxstream_model_run(onnxstream_model_t *model);

/** A read-only view of an output tensor. */
typedef struct onnxstream_tensor_view {
    uint32_t struct_size;
    const char *name; /**< escaped model.txt spelling */
    onnxstream_dtype_t dtype;
    size_t rank;
    const int64_t *shape;
    const void *data;
    size_t byte_size;
} onnxstream_tensor_view_t;

/** Number of graph inputs (tensors that no op produces) of the loaded model; 0 if none is loaded. */
ONNXSTREAM_API size_t onnxstream_model_input_count(const onnxstream_model_t *model);

/**
 * Describe graph input number index: name (escaped), rank and shape as declared in model.txt (-1 for a
 * dimension of any size, '?' in a resizable model's model.txt), data NULL.
 * model.txt does not record activation dtypes: dtype is the dtype of the last pushed tensor, or
 * ONNXSTREAM_DTYPE_FLOAT32 before one is pushed. Valid until the model is destroyed.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL pointers, struct_size 0, index out of range.
 * @retval ONNXSTREAM_ERR_BAD_STATE        no model loaded.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_get_input(onnxstream_model_t *model, size_t index, onnxstream_tensor_view_t *view);

/** Number of outputs of the last successful run (0 before one). NULL model -> 0. */
ONNXSTREAM_API size_t onnxstream_model_output_count(const onnxstream_model_t *model);

/**
 * Fill *view with output number index of the last successful run. The view (name, shape, data) stays
 * valid until the next run, load or destroy of this model. view->struct_size must be set by the caller.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL pointers, struct_size 0, or index out of range.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_get_output(onnxstream_model_t *model, size_t index, onnxstream_tensor_view_t *view);

/** Same as onnxstream_model_get_output, by name (escaped or original spelling). */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t onnxstream_model_get_output_by_name(
    onnxstream_model_t *model, const char *name, onnxstream_tensor_view_t *view);

/** Memory statistics of the model's tracked tensor allocator. */
typedef struct onnxstream_memory_stats {
    uint32_t struct_size;
    uint64_t current_bytes; /**< tensor bytes alive now (outputs of the last run, pushed inputs, caches) */
    uint64_t peak_bytes;    /**< high-water mark since the last reset */
} onnxstream_memory_stats_t;

/** Read the memory statistics; reset_peak != 0 restarts the high-water mark from current_bytes. */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_memory_stats(onnxstream_model_t *model, onnxstream_memory_stats_t *stats, int reset_peak);

/** Figures of the last successful run. */
typedef struct onnxstream_run_stats {
    uint32_t struct_size;
    uint64_t run_us;              /**< wall time of the run */
    uint64_t weight_bytes_read;   /**< bytes the weights provider read during the run */
    uint64_t weight_read_us;      /**< time spent reading them, on any thread (prefetch reads overlap ops) */
    uint64_t weight_wait_us;      /**< time the run waited for weights; read_us - wait_us was hidden */
    /* Since 0.3: */
    uint64_t layout_transposes;   /**< NCHW <-> NHWC activation transposes done (in ops and at layout boundaries) */
    /* Since 0.4: */
    uint64_t fp16_ops;            /**< ops that computed in float16 arithmetic */
    uint64_t fp16_fallbacks;      /**< ops that were to compute in float16 but ran in float32 (no f16 kernels) */
    int32_t arithmetic;           /**< the model's resolved arithmetic: ONNXSTREAM_ARITHMETIC_FP32 or _FP16 */
    /* Since 0.5: */
    uint64_t weight_bytes_copied; /**< bytes written turning weights into kernel input: layout changes, float16
                                       widening, 8-bit dequantization, padded and row copies (XNNPACK's own
                                       packing is not counted) */
    /* Since 0.9: */
    uint64_t int8_ops;            /**< ops that computed an 8-bit weight in int8 arithmetic, their activations
                                       quantized when the op ran (ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS) */
    /* Since 0.15 (builds against XNNPACK's 2024 API, with options.cache_path): */
    uint64_t packed_weights_mapped; /**< operators whose packed weights were mapped from the packed-weights
                                         file ("<cache_path>.xnnpack") instead of being packed */
    uint64_t packed_weights_stored; /**< operators whose packed weights this run wrote to that file (the first
                                         complete run of a model builds it) */
    /* Since 0.20: */
    uint64_t kept_kernels;        /**< ops keeping their prepared kernels between runs within the memory mode's
                                       budget (balanced; 0 in min, and in max-speed, which keeps every op's) */
    uint64_t kept_kernel_bytes;   /**< the memory those kept kernels hold */
} onnxstream_run_stats_t;

/** Read the figures of the last successful run (zeros before one). */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_run_stats(onnxstream_model_t *model, onnxstream_run_stats_t *stats);

/* ------------------------------------------------------------------------------------------------ */
/* Profiling (since 0.6; needs ONNXSTREAM_FLAG_PROFILE)                                              */

/** One op of a profiled run. */
typedef struct onnxstream_op_profile {
    uint32_t struct_size;
    size_t op_index;
    size_t line;              /**< model.txt line */
    const char *op_name;
    const char *op_type;
    const char *inputs;       /**< logical dtypes and shapes, "float32[1,3,640,640], w:float16[16,3,3,3]"
                                   (w: a weight, -: an absent optional input) */
    const char *outputs;
    uint64_t start_ns;        /**< from the start of the run */
    uint64_t duration_ns;     /**< including its weight fetches and kernel preparation */
    uint64_t weight_wait_ns;  /**< fetching its weights and reading streamed weight rows (run thread) */
    uint64_t kernel_prepare_ns; /**< XNNPACK operator creation (weight packing) and setup (indirection buffers) */
    uint64_t flops;           /**< 2 per multiply-add of matrix ops (Conv, ConvTranspose, MatMul, Gemm, Einsum,
                                   fused attention and feed-forward); 0 for the others */
    uint64_t weight_bytes;    /**< stored bytes of its weights */
    uint64_t activation_bytes; /**< bytes of its activation inputs and outputs */
    uint64_t memory_bytes;    /**< tracked tensor bytes alive after it */
} onnxstream_op_profile_t;

typedef enum onnxstream_profile_format {
    ONNXSTREAM_PROFILE_TRACE_JSON = 0, /**< Chrome trace events: loads in Perfetto and chrome://tracing */
    ONNXSTREAM_PROFILE_SUMMARY = 1     /**< a text table per op type, sorted by time */
} onnxstream_profile_format_t;

/** A machine's measured ceilings, for the summary's "% peak" column. */
typedef struct onnxstream_roofline {
    uint32_t struct_size;
    double flops_per_s; /**< float32 matrix multiplication (XNNPACK's GEMM) */
    double bytes_per_s; /**< memory bandwidth (a copy much bigger than the caches: bytes read + written) */
} onnxstream_roofline_t;

/** Number of ops in the profile of the last successful run: 0 without ONNXSTREAM_FLAG_PROFILE, before a
    run, or for a NULL model. */
ONNXSTREAM_API size_t onnxstream_model_profile_op_count(const onnxstream_model_t *model);

/**
 * Fill *op with op number index of the last successful run's profile. Strings stay valid until the next
 * run, load or destroy of this model. op->struct_size must be set by the caller.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL pointers, struct_size 0, or index out of range.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_get_op_profile(onnxstream_model_t *model, size_t index, onnxstream_op_profile_t *op);

/**
 * Render the last successful run's profile. peak (may be NULL) adds the summary's "% peak" column.
 * *text is NUL-terminated and stays valid until the next render, run, load or destroy of this model;
 * length (may be NULL) receives its length.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL model or text, an unknown format, peak->struct_size 0.
 * @retval ONNXSTREAM_ERR_BAD_STATE        ONNXSTREAM_FLAG_PROFILE not set, or no successful run yet.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t
onnxstream_model_render_profile(onnxstream_model_t *model, onnxstream_profile_format_t format,
                                const onnxstream_roofline_t *peak, const char **text, size_t *length);

/**
 * Measure this machine's roofline with `threads` worker threads (0 = one per core): XNNPACK's float32
 * GEMM on a cache-friendly problem and a copy much bigger than the caches. Takes about a second.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT out NULL, out->struct_size 0, threads negative.
 * @retval ONNXSTREAM_ERR_OUT_OF_MEMORY    the buffers could not be allocated.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t onnxstream_measure_roofline(int32_t threads,
                                                                                    onnxstream_roofline_t *out);

/* ------------------------------------------------------------------------------------------------ */
/* ONNX conversion                                                                                   */

/** onnxstream_convert_onnx is available (this header section exists). */
#define ONNXSTREAM_HAS_CONVERT 1

typedef struct onnxstream_convert_options {
    uint32_t struct_size; /**< sizeof(onnxstream_convert_options_t); set by onnxstream_convert_options_init */
    int32_t fp16;         /**< nonzero: store float32 weights as float16 (default 0) */
    /** Weights to keep float32 under fp16: NULL-terminated array of fnmatch(3) patterns matched against the
        ONNX initializer name and against the weight file name ("*norm*", "model_2E_22*"); may be NULL. */
    const char *const *keep_fp32;
    /** The same patterns as one ';'-separated string ("*norm*;*bias"); may be NULL. Both lists apply. */
    const char *keep_fp32_list;
    /** Fixed shapes for graph inputs with symbolic dimensions: NULL-terminated array of "NAME=d0,d1,..."
        strings ("sample=1,4,64,64"); may be NULL. */
    const char *const *input_shapes;
    /** Optional: receives the conversion report (per-op-type counts before/after simplification, weight
        bytes, largest weight) once at ONNXSTREAM_LOG_INFO, and each warning (extra outputs, values clamped
        to the float16 range, ...) at ONNXSTREAM_LOG_WARNING. Called on the converting thread. */
    onnxstream_log_fn report_fn;
    void *report_user_data;
    /** Weight quantization: 0 none (default); 1 "w8": float32 Conv / Gemm / MatMul weights with >= 2 dims
        and >= 4096 elements are stored as symmetric int8 with one float32 scale per output channel
        (scale = max|w| / 127, round half to even, clamp to +-127) in "<weight>_scales.bin", written in
        model.txt as `file.bin(int8[@file_scales.bin,axis]:...)`; they are dequantized to float32 at run
        time (W8A32, about 1/4 of the float32 weight bytes). Other weights are unchanged (fp16 still
        applies to them). 2 "w8a8" (since 0.3): the same weights as uint8 asymmetric with one scale and
        zero point per tensor (OnnxStream's `uint8[scale,zero_point]`), plus a range_data.txt calibrated by
        running the float32 model on calibration_inputs, so those ops compute in uint8 (static W8A8).
        3 "w4" (since 0.18): the w8 weights read only as B of MatMul or Gemm or as the two weights of the
        fused GEGLU feed-forward, whose K is a multiple of 32, are stored as blockwise int4 (blocks of 32 along K, one bfloat16 scale each; model.txt
        `file.bin(int4[32,axis]:...)`), the others as w8 does. int4 weights compute only in int8 arithmetic
        through XNNPACK's 2024 API: a library built against the 2022-02 API refuses such a model at load
        with ONNXSTREAM_ERR_UNSUPPORTED. Any other value is ONNXSTREAM_ERR_INVALID_ARGUMENT. */
    int32_t quantize;
    /* Since 0.3: */
    /** quantize = 2: a folder of calibration runs, one subfolder per run (sorted by name) holding one
        NAME.npy per graph input (float32, the declared shape), e.g. DIR/0/latent_sample.npy. Required
        for quantize = 2, else must be NULL. */
    const char *calibration_inputs;
    /* Since 0.7: */
    /** How the weights are stored: ONNXSTREAM_WEIGHTS_FILES (0, default) one .bin file per weight, as
        OnnxStream's folders; ONNXSTREAM_WEIGHTS_SAFETENSORS (1) one model.safetensors file holding them
        all (docs/model-format.md). Any other value is ONNXSTREAM_ERR_INVALID_ARGUMENT. */
    int32_t weights_format;
    /** Graph inputs pinned to a value at conversion: NULL-terminated array of "NAME=v0,v1,..." strings
        ("sr=16000"), as many values as the input's static shape has elements (fix symbolic dimensions with
        input_shapes), in its element type (float32/float16, int64/int32/int8/uint8, bool as 0/1). The
        input becomes a constant and leaves the model's inputs, so what depends on it folds away: an If on
        it is replaced by the branch taken. May be NULL. */
    const char *const *input_values;
    /* Since 0.12: */
    /** One model for many input sizes: NULL-terminated array of "NAME=d0,d1,..." strings giving a second
        size for graph inputs ("sample=1,4,96,80" beside input_shapes' "sample=1,4,64,64"). The model is
        converted for both sizes; each dimension that differs becomes '?' in model.txt (any size, set by
        the pushed input), and each shape the graph computes from the input size is kept as a rule over
        the input dimensions (the InputDims op) instead of a constant for one size. Choose a size the model
        takes, with a different value in every dimension that varies (96 and 80, not 96 and 96), so the rules
        are told apart. A model whose nodes or other constants differ between the two sizes cannot be made
        resizable (ONNXSTREAM_ERR_UNSUPPORTED names where). May be NULL. */
    const char *const *resizable_shapes;
} onnxstream_convert_options_t;

/** Values of onnxstream_convert_options_t.weights_format. */
#define ONNXSTREAM_WEIGHTS_FILES 0
#define ONNXSTREAM_WEIGHTS_SAFETENSORS 1

/** Fill *options with defaults and struct_size. Safe to call with NULL (does nothing). */
ONNXSTREAM_API void onnxstream_convert_options_init(onnxstream_convert_options_t *options);

/**
 * Convert an ONNX model (opset 11 up to the newest the linked ONNX library knows; external data files
 * are found relative to the model file) into an OnnxStream model folder: model.txt plus one .bin file
 * per weight. The graph is shape-inferred and simplified first (constant folding with the engine's own
 * kernels, no-op and dead-code elimination, BatchNormalization folded into Conv). out_dir must not exist
 * (or be an empty folder) and its parent must exist; the model is written to a temporary sibling folder,
 * checked with the engine's own parser and shape planner, and renamed to out_dir, so a failed conversion
 * never leaves a partial folder behind. options may be NULL (defaults).
 *
 * Untrusted models: the ONNX file may come from anyone. Before the ONNX library's version converter or
 * shape inference reads it, the whole model (subgraphs and model-local functions included) is validated:
 * each node's input and output counts, required inputs, attribute names and types against its operator
 * at the model's opset; every value name resolved and produced once; no cycle; every initializer's data
 * matching its dims and data type. Conv, ConvTranspose and pooling nodes whose input and weight ranks
 * disagree, or whose strides or dilations are not positive, are rejected while shapes are inferred. Element
 * and byte counts computed from the file's dims are checked for overflow (INVALID_MODEL) and against the
 * address space (OUT_OF_MEMORY on 32-bit builds), never wrapped; external data is read only from regular
 * files inside the model's folder. Each of these failures is a status and a message naming the node or
 * tensor. The conversion runs in the calling thread and process and links Debian's libonnx, whose passes
 * were not written for hostile input; the checks above cover every defect fuzzing has found in them
 * (docs/testing.md), but a host that must survive any file may prefer to run the onnxstream-convert tool
 * in a child process.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT NULL paths, struct_size 0, a bad pattern or input shape, out_dir
 *         exists and is not empty, or an input keeps a symbolic dimension (fix it with input_shapes).
 * @retval ONNXSTREAM_ERR_IO               the model or an external data file is missing, unreadable or
 *         truncated, or the output cannot be written.
 * @retval ONNXSTREAM_ERR_INVALID_MODEL    not a parsable ONNX file, a node or initializer the validation
 *         above rejects, dangling or doubly produced values, a cycle, or shapes that do not check.
 * @retval ONNXSTREAM_ERR_OUT_OF_MEMORY    a tensor's byte count does not fit this platform's size_t, or
 *         memory ran out.
 * @retval ONNXSTREAM_ERR_UNSUPPORTED      operators this engine cannot run (the message lists every type with
 *         its count and first node), tensors model.txt cannot store, or an opset outside the range above.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t onnxstream_convert_onnx(
    const char *onnx_path, const char *out_dir, const onnxstream_convert_options_t *options);

/* ------------------------------------------------------------------------------------------------ */
/* One-file weight stores                                                                            */

/** onnxstream_pack_weights is available. */
#define ONNXSTREAM_HAS_PACK_WEIGHTS 1

/**
 * Since 0.7. Pack the weight files of a model folder (OnnxStream's or onnxstream-convert's) into one
 * model.safetensors in that folder: every .bin file model.txt references (both of a Conv weight's _nchw/_nhwc
 * files when both exist) and every per-channel scales file, each named by its file name without ".bin".
 * Models load from such a folder with every weights provider; a weight is looked up in model.safetensors
 * first, then as a file (docs/model-format.md). The data is copied a few MiB at a time; the store is
 * written under a temporary name and renamed into place, and only then, with remove_files nonzero, are
 * the packed files deleted. model.txt is not changed. Runs in the calling thread.
 * @retval ONNXSTREAM_ERR_INVALID_ARGUMENT folder is NULL, or it already has a model.safetensors.
 * @retval ONNXSTREAM_ERR_INVALID_MODEL    model.txt does not parse, or names one file with two types.
 * @retval ONNXSTREAM_ERR_IO               model.txt or a weight file is missing, a weight file's size
 *         does not match its model.txt type, or the store cannot be written.
 */
ONNXSTREAM_API ONNXSTREAM_NODISCARD onnxstream_status_t onnxstream_pack_weights(const char *folder,
                                                                                int32_t remove_files);

#ifdef __cplusplus
}
#endif

#endif /* ONNXSTREAM_H */
