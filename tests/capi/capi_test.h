/*
 * Tiny test helpers for the C API tests (C99). A failed check prints file:line and what failed,
 * counts the failure and carries on; test_finish() turns the count into the exit status.
 */
#ifndef ONNXSTREAM_CAPI_TEST_H
#define ONNXSTREAM_CAPI_TEST_H

#include <stddef.h>

#include "onnxstream.h"

extern int test_failures;

void test_fail(const char *file, int line, const char *fmt, ...);
int test_check_status(const char *file, int line, const char *expr, onnxstream_status_t got,
                      onnxstream_status_t expected);
int test_check_contains(const char *file, int line, const char *what, const char *text, const char *needle);
int test_check_float(const char *file, int line, const char *what, float got, float expected);
/* Prints the summary; returns the process exit status. */
int test_finish(const char *name);

#define CHECK(cond)                                                                                           \
    do {                                                                                                      \
        if (!(cond)) test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);                               \
    } while (0)
#define CHECK_STATUS(expr, expected) test_check_status(__FILE__, __LINE__, #expr, (expr), (expected))
#define CHECK_OK(expr) CHECK_STATUS(expr, ONNXSTREAM_OK)
#define CHECK_CONTAINS(text, needle) test_check_contains(__FILE__, __LINE__, #text, (text), (needle))
#define CHECK_FLOAT(got, expected) test_check_float(__FILE__, __LINE__, #got, (got), (expected))

/* A model with default options except one worker thread and the given provider kind; NULL on failure. */
onnxstream_model_t *test_new_model(int provider);

/* Temporary folder for weight files: created by test_temp_dir, removed (with its plain files) by
 * test_remove_dir. */
int test_temp_dir(char *out, size_t capacity);
void test_remove_dir(const char *dir);
int test_write_file(const char *dir, const char *name, const void *data, size_t size);

#endif
