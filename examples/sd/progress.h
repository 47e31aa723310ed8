/*
 * progress.h - the diffusion loop's progress bar on stderr, with time per step, ETA and memory:
 *
 *   step 3/20 [###.................] 1.84 s/step, ETA 31 s, mem 123/456 MB
 *
 * Split in two so the text is testable without a clock or a terminal: sd_progress_format() is a pure
 * function of its arguments; sd_progress_t is a small caller-owned state (start time, output stream) whose
 * printer reads the clock and the process's memory and calls the formatter.
 * No global state; nothing here allocates.
 */
#ifndef SD_PROGRESS_H
#define SD_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Width of the [###...] bar in characters. */
#define SD_PROGRESS_BAR_WIDTH 20

/*
 * Formats one progress line (no trailing newline or carriage return) into buf (size bytes, always
 * NUL-terminated when size > 0; truncated if too small). Returns the length the full line has, like
 * snprintf, so a return value >= size means it was truncated. 128 bytes always suffice.
 *
 *   step       steps completed so far, 0..total (clamped into that range)
 *   total      total number of steps (<= 0 is treated as 1)
 *   elapsed_s  seconds since the loop started (negative treated as 0)
 *   cur_bytes  current resident memory, 0 = unknown (printed as "?")
 *   peak_bytes peak resident memory, 0 = unknown; the whole "mem" part is left out when both are unknown
 *
 * The bar has floor(step * SD_PROGRESS_BAR_WIDTH / total) '#' characters, the rest '.'.
 * Seconds per step = elapsed/step with two decimals; ETA = s/step * (total - step) rounded to whole
 * seconds and printed as "31 s", "2m05s" (>= 60 s) or "1h02m" (>= 1 h). Before the first step is done
 * both are unknown and printed as "-- s/step, ETA --". Memory is in MB of 1024*1024 bytes, rounded to
 * nearest.
 */
int sd_progress_format(char *buf, size_t size, int step, int total, double elapsed_s, uint64_t cur_bytes,
                       uint64_t peak_bytes);

/*
 * Current and peak resident set size of this process in bytes. Current comes from /proc/self/statm
 * (resident pages * page size), peak from getrusage(RUSAGE_SELF).ru_maxrss (KiB on Linux). Either is set
 * to 0 when it cannot be read (e.g. no /proc). Both pointers may be NULL.
 */
void sd_memory_usage(uint64_t *cur_bytes, uint64_t *peak_bytes);

/* Seconds from a monotonic clock (CLOCK_MONOTONIC); only differences are meaningful. */
double sd_progress_now(void);

/*
 * Progress state for one loop; caller-owned (typically on the stack), no cleanup needed.
 * On a terminal, each update rewrites the same line ("\r" + line, padded with spaces to cover a longer
 * previous line) and the last step ends it with "\n"; when `out` is not a terminal (a log file, CI) each
 * update is its own line, so logs stay readable.
 */
typedef struct sd_progress {
    FILE *out;         /* borrowed; usually stderr */
    int total;
    double start;      /* sd_progress_now() at sd_progress_start */
    int is_tty;
    size_t last_len;   /* length of the previous line on a terminal, to blank its leftovers */
    int line_open;     /* a terminal line was written without its final "\n" */
} sd_progress_t;

/* Starts the clock and prints "step 0/total" so the user sees something while step 1 runs. */
void sd_progress_start(sd_progress_t *p, FILE *out, int total);

/* Call after each completed step (1..total). Reports write errors by ignoring them: progress output must
 * never fail the generation. */
void sd_progress_update(sd_progress_t *p, int step);

/*
 * Ends the line if the loop stopped early (error or cancel) so later messages start on a fresh line,
 * and prints "LABEL: N steps in T s (X s/step), peak mem P MB" when label is non-NULL.
 */
void sd_progress_finish(sd_progress_t *p, int steps_done, const char *label);

#ifdef __cplusplus
}
#endif

#endif
