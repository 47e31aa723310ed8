/*
 * test_progress.c - the progress line's exact text for fixed inputs, memory readings, and the printer's
 * output to a non-terminal stream.
 * Usage: test_sd_progress [SHARED_FOLDER] (unused)
 */
#include "progress.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024ull * 1024ull)

static void expect(int step, int total, double elapsed, uint64_t cur, uint64_t peak, const char *want)
{
    char buf[256];
    int n = sd_progress_format(buf, sizeof buf, step, total, elapsed, cur, peak);
    CHECK(n == (int)strlen(want));
    CHECK(strcmp(buf, want) == 0);
    if (strcmp(buf, want) != 0) fprintf(stderr, "  got:  '%s'\n  want: '%s'\n", buf, want);
}

static void test_format(void)
{
    expect(3, 20, 5.52, 123 * MB, 456 * MB,
           "step 3/20 [###.................] 1.84 s/step, ETA 31 s, mem 123/456 MB");
    expect(0, 20, 0.3, 100 * MB, 100 * MB, "step 0/20 [....................] -- s/step, ETA --, mem 100/100 MB");
    expect(20, 20, 40.0, 10 * MB, 2048 * MB,
           "step 20/20 [####################] 2.00 s/step, ETA 0 s, mem 10/2048 MB");
    expect(1, 3, 0.5, 0, 0, "step 1/3 [######..............] 0.50 s/step, ETA 1 s");
    /* ETA formats: minutes and hours. */
    expect(1, 50, 2.5, 0, 0, "step 1/50 [....................] 2.50 s/step, ETA 2m03s");
    expect(2, 100, 150.0, 0, 0, "step 2/100 [....................] 75.00 s/step, ETA 2h02m");
    /* Half-steps of the bar round down; memory rounds to nearest MB; unknown current memory is "?". */
    expect(10, 20, 10.0, 0, 1536 * 1024, "step 10/20 [##########..........] 1.00 s/step, ETA 10 s, mem ?/2 MB");
    expect(1, 1, 0.0, MB + 1, MB - 1, "step 1/1 [####################] 0.00 s/step, ETA 0 s, mem 1/1 MB");
    /* Out-of-range inputs are clamped, not trusted. */
    expect(25, 20, 20.0, 0, 0, "step 20/20 [####################] 1.00 s/step, ETA 0 s");
    expect(-3, 0, -1.0, 0, 0, "step 0/1 [....................] -- s/step, ETA --");

    /* Truncation behaves like snprintf. */
    {
        char small[10];
        int n = sd_progress_format(small, sizeof small, 3, 20, 5.52, 0, 0);
        CHECK(n > 9 && strlen(small) == 9 && strncmp(small, "step 3/20", 9) == 0);
        CHECK(sd_progress_format(NULL, 0, 3, 20, 5.52, 0, 0) == n);
    }
}

static void test_memory(void)
{
    uint64_t cur = 0, peak = 0;
    /* Touch 32 MB so the readings are clearly above zero and the peak has something to record. */
    size_t big = 32u << 20;
    char *p = (char *)malloc(big);
    /* Volatile stores, one per page: the optimiser may drop a memset of memory nothing reads (it did, in
     * the sanitizer build), and then no page is touched. */
    volatile char *touch = p;
    for (size_t i = 0; p && i < big; i += 4096) touch[i] = 1;
    sd_memory_usage(&cur, &peak);
    CHECK(cur > (16u << 20));
    CHECK(peak >= cur / 2 && peak > (16u << 20));
    CHECK(peak < (64ull << 30));
    fprintf(stderr, "current %llu MB, peak %llu MB\n", (unsigned long long)(cur / MB),
            (unsigned long long)(peak / MB));
    free(p);
    sd_memory_usage(NULL, NULL);
}

static void test_printer(void)
{
    FILE *f = tmpfile();
    sd_progress_t pr;
    char text[2048];
    size_t n;
    int i, lines = 0;

    CHECK(f != NULL);
    if (!f) return;
    sd_progress_start(&pr, f, 4);
    CHECK(pr.is_tty == 0);
    for (i = 1; i <= 2; i++) sd_progress_update(&pr, i);
    sd_progress_finish(&pr, 2, "stopped");
    rewind(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    for (i = 0; text[i]; i++) lines += text[i] == '\n';
    /* A file gets one line per update (no "\r"), then the summary. */
    CHECK(lines == 4);
    CHECK(strchr(text, '\r') == NULL);
    CHECK(strncmp(text, "step 0/4 [....................] -- s/step, ETA --", 49) == 0);
    CHECK(strstr(text, "\nstep 1/4 [#####...............] ") != NULL);
    CHECK(strstr(text, "\nstep 2/4 [##########..........] ") != NULL);
    CHECK(strstr(text, "\nstopped: 2 steps in ") != NULL && strstr(text, " MB\n") != NULL);
    {
        double t0 = sd_progress_now(), t1 = sd_progress_now();
        CHECK(t0 > 0.0 && t1 >= t0);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_format();
    test_memory();
    test_printer();
    return check_summary();
}
