/* The checks of the SD example's unit tests. A failed check is printed and counted and the test carries on,
 * so one failure does not hide the others; check_summary() prints the counts and gives the exit status. Each
 * test is its own program, so the counters are per program. */
#ifndef SD_TESTS_CHECK_H
#define SD_TESTS_CHECK_H

#include <stdio.h>

static int g_passed, g_failed;

static inline void check(int ok, const char *what)
{
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        printf("FAIL: %s\n", what);
    }
}

static inline void check_at(int ok, const char *file, int line, const char *expression)
{
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        printf("FAIL %s:%d: %s\n", file, line, expression);
    }
}

/* CHECK(cond) names the failed expression and where it is. */
#define CHECK(cond) check_at((cond) ? 1 : 0, __FILE__, __LINE__, #cond)

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}

#endif
