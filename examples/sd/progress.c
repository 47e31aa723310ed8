/*
 * progress.c - see progress.h.
 */
#include "progress.h"

#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void format_duration(char *buf, size_t size, double seconds)
{
    long s = (long)floor(seconds + 0.5);
    if (s < 60)
        snprintf(buf, size, "%ld s", s);
    else if (s < 3600)
        snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, size, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
}

static void format_mb(char *buf, size_t size, uint64_t bytes)
{
    if (bytes == 0)
        snprintf(buf, size, "?");
    else
        snprintf(buf, size, "%llu", (unsigned long long)((bytes + 512 * 1024) / (1024 * 1024)));
}

int sd_progress_format(char *buf, size_t size, int step, int total, double elapsed_s, uint64_t cur_bytes,
                       uint64_t peak_bytes)
{
    char bar[SD_PROGRESS_BAR_WIDTH + 1];
    char rate[32], eta[32], mem[64], cur[24], peak[24];
    int filled, i;
    char dummy[1];

    if (total <= 0) total = 1;
    if (step < 0) step = 0;
    if (step > total) step = total;
    /* NaN also goes to 0 here. */
    if (!(elapsed_s > 0.0)) elapsed_s = 0.0;

    filled = (int)((long long)step * SD_PROGRESS_BAR_WIDTH / total);
    for (i = 0; i < SD_PROGRESS_BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[SD_PROGRESS_BAR_WIDTH] = '\0';

    if (step > 0) {
        double per_step = elapsed_s / step;
        snprintf(rate, sizeof rate, "%.2f s/step", per_step);
        format_duration(eta, sizeof eta, per_step * (total - step));
    } else {
        snprintf(rate, sizeof rate, "-- s/step");
        snprintf(eta, sizeof eta, "--");
    }

    if (cur_bytes == 0 && peak_bytes == 0) {
        mem[0] = '\0';
    } else {
        format_mb(cur, sizeof cur, cur_bytes);
        format_mb(peak, sizeof peak, peak_bytes);
        snprintf(mem, sizeof mem, ", mem %s/%s MB", cur, peak);
    }

    if (!buf || size == 0) {
        buf = dummy;
        size = sizeof dummy;
    }
    return snprintf(buf, size, "step %d/%d [%s] %s, ETA %s%s", step, total, bar, rate, eta, mem);
}

void sd_memory_usage(uint64_t *cur_bytes, uint64_t *peak_bytes)
{
    if (cur_bytes) {
        FILE *f = fopen("/proc/self/statm", "r");
        unsigned long long size_pages = 0, resident_pages = 0;
        long page = sysconf(_SC_PAGESIZE);
        *cur_bytes = 0;
        if (f) {
            if (fscanf(f, "%llu %llu", &size_pages, &resident_pages) == 2 && page > 0)
                *cur_bytes = (uint64_t)resident_pages * (uint64_t)page;
            fclose(f);
        }
    }
    if (peak_bytes) {
        struct rusage ru;
        *peak_bytes = 0;
        /* ru_maxrss is in KiB on Linux and the BSDs (bytes on macOS, which this example does not target). */
        if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0) *peak_bytes = (uint64_t)ru.ru_maxrss * 1024u;
        /* ru_maxrss is sampled by the kernel and can trail the current RSS a little: peak >= current. */
        if (cur_bytes && *peak_bytes && *cur_bytes > *peak_bytes) *peak_bytes = *cur_bytes;
    }
}

double sd_progress_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_line(sd_progress_t *p, int step)
{
    char line[160];
    uint64_t cur = 0, peak = 0;
    int n;

    sd_memory_usage(&cur, &peak);
    n = sd_progress_format(line, sizeof line, step, p->total, sd_progress_now() - p->start, cur, peak);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    if (p->is_tty) {
        /* Pad with spaces so a shorter line fully covers the previous one (e.g. when the ETA shrinks). */
        int pad = p->last_len > (size_t)n ? (int)(p->last_len - (size_t)n) : 0;
        fprintf(p->out, "\r%s%*s", line, pad, "");
        p->last_len = (size_t)n;
        if (step >= p->total) {
            fputc('\n', p->out);
            p->line_open = 0;
            p->last_len = 0;
        } else {
            p->line_open = 1;
        }
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
}

void sd_progress_start(sd_progress_t *p, FILE *out, int total)
{
    if (!p) return;
    p->out = out ? out : stderr;
    p->total = total > 0 ? total : 1;
    p->start = sd_progress_now();
    p->is_tty = isatty(fileno(p->out)) ? 1 : 0;
    p->last_len = 0;
    p->line_open = 0;
    print_line(p, 0);
}

void sd_progress_update(sd_progress_t *p, int step)
{
    if (!p || !p->out) return;
    print_line(p, step);
}

void sd_progress_finish(sd_progress_t *p, int steps_done, const char *label)
{
    double elapsed;
    uint64_t peak = 0;

    if (!p || !p->out) return;
    if (p->line_open) {
        fputc('\n', p->out);
        p->line_open = 0;
        p->last_len = 0;
    }
    if (label) {
        elapsed = sd_progress_now() - p->start;
        sd_memory_usage(NULL, &peak);
        fprintf(p->out, "%s: %d steps in %.1f s (%.2f s/step), peak mem %llu MB\n", label, steps_done, elapsed,
                steps_done > 0 ? elapsed / steps_done : 0.0,
                (unsigned long long)((peak + 512 * 1024) / (1024 * 1024)));
    }
    fflush(p->out);
}
