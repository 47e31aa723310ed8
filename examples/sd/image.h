/*
 * image.h - turning the VAE decoder's output into a PNG, reading PNGs back, and raw latents files.
 *
 * Conventions:
 *   - Fallible functions return an onnxstream_status_t (ONNXSTREAM_OK = 0 on success) and, on failure,
 *     write a one-line message (naming the file and what is wrong) into the caller's `err` buffer of
 *     `err_size` bytes (always NUL-terminated when err_size > 0; `err` may be NULL to ignore it).
 *   - Nothing is printed and nothing aborts: libpng's own errors are caught with setjmp/longjmp and
 *     returned like any other error.
 *   - Files are written to a temporary file in the destination folder and renamed over the target only
 *     once complete, so a failed write never leaves a partial file (nor a temporary one) behind.
 *   - Not thread-hostile: no global state; different calls may run concurrently.
 */
#ifndef SD_IMAGE_H
#define SD_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "onnxstream.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Generation parameters embedded in the PNG as a `parameters` text chunk, the key and layout AUTOMATIC1111's
 * web UI uses (so tools that read A1111 metadata show them):
 *
 *   PROMPT
 *   Negative prompt: NEG                 (line omitted when the negative prompt is NULL or empty)
 *   Steps: N, Sampler: S, CFG scale: C, Seed: SEED, Size: WxH, Model: M
 *
 * ", Model: M" is omitted when model is NULL or empty. C is printed with %g (7.5, 7). All strings are
 * UTF-8 and borrowed (never freed by these functions).
 */
typedef struct sd_image_params {
    const char *prompt;          /* may be NULL (written as empty) */
    const char *negative_prompt; /* may be NULL */
    int steps;
    const char *sampler;         /* e.g. "euler_a"; NULL written as empty */
    double cfg_scale;
    uint64_t seed;
    int width;
    int height;
    const char *model;           /* e.g. the models folder's name; may be NULL */
} sd_image_params_t;

/*
 * Formats `params` as described above into a newly malloc'ed NUL-terminated string that the caller frees
 * with free(). Returns NULL only when out of memory or params is NULL.
 */
char *sd_image_format_parameters(const sd_image_params_t *params);

/*
 * Converts the VAE decoder output, float32 NCHW (1,3,height,width) with values nominally in [-1,1], to
 * interleaved 8-bit RGB (height*width*3 bytes, row-major, caller-allocated `rgb`).
 * Per value x: v = clamp(x/2 + 0.5, 0, 1), byte = floor(v*255 + 0.5) (round half up); NaN gives 0.
 */
void sd_image_from_nchw(const float *nchw, int width, int height, uint8_t *rgb);

/*
 * Writes an 8-bit RGB image (width*height*3 bytes, row-major, no padding) as a PNG at `path`.
 * `parameters` (UTF-8, may be NULL to write no text chunk) is stored under the keyword "parameters":
 * as a tEXt chunk when it is pure ASCII, as an uncompressed iTXt chunk (UTF-8 by definition) otherwise,
 * since tEXt is Latin-1 and would garble non-ASCII prompts.
 * Errors: ONNXSTREAM_ERR_INVALID_ARGUMENT (NULL pointer, non-positive or too large size),
 * ONNXSTREAM_ERR_IO (folder missing / not writable, disk full, rename failed, libpng error),
 * ONNXSTREAM_ERR_OUT_OF_MEMORY. On any error no file is left at `path` or next to it (an existing file at
 * `path` is left unchanged).
 */
onnxstream_status_t sd_png_write(const char *path, const uint8_t *rgb, int width, int height,
                                 const char *parameters, char *err, size_t err_size);

/*
 * Reads any PNG (gray, palette, 16-bit, with alpha, interlaced) as 8-bit RGB: palette and gray are
 * expanded, 16-bit is reduced to 8, alpha is dropped (not composited).
 * On success *rgb is a malloc'ed width*height*3 buffer the caller frees; *width and *height are set; if
 * `parameters` is non-NULL it receives a malloc'ed copy of the "parameters" text (tEXt, zTXt or iTXt) or
 * NULL when the image has none. On failure all outputs are set to NULL/0 and nothing needs freeing.
 * Errors: ONNXSTREAM_ERR_INVALID_ARGUMENT, ONNXSTREAM_ERR_IO (missing/unreadable file, not a PNG, corrupt
 * data), ONNXSTREAM_ERR_OUT_OF_MEMORY.
 */
onnxstream_status_t sd_png_read(const char *path, uint8_t **rgb, int *width, int *height, char **parameters,
                                char *err, size_t err_size);

/*
 * Latents files (`--save-latents` / `--decode-latents`): exactly `count` raw float32 values in
 * little-endian byte order, no header - the format OnnxStream writes and reads. For SD the latents are
 * (1,4,height/8,width/8), so count = 4*(height/8)*(width/8); sd_latents_count() computes it.
 */
size_t sd_latents_count(int width, int height);

/*
 * Saves `count` floats to `path` (temporary file + rename, as sd_png_write).
 * Errors: ONNXSTREAM_ERR_INVALID_ARGUMENT, ONNXSTREAM_ERR_IO.
 */
onnxstream_status_t sd_latents_save(const char *path, const float *data, size_t count, char *err,
                                    size_t err_size);

/*
 * Loads exactly `count` floats from `path` into the caller's `data`. The file size must be exactly
 * count*4 bytes; otherwise ONNXSTREAM_ERR_IO with a message giving the actual and the expected size.
 * Non-finite values (NaN/Inf) are rejected with ONNXSTREAM_ERR_IO too, since they can only come from a
 * wrong or corrupt file and would decode to a black image without saying why.
 * Errors: ONNXSTREAM_ERR_INVALID_ARGUMENT, ONNXSTREAM_ERR_IO.
 */
onnxstream_status_t sd_latents_load(const char *path, float *data, size_t count, char *err,
                                    size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
