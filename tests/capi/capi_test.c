#include "capi_test.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int test_failures = 0;

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    ++test_failures;
}

int test_check_status(const char *file, int line, const char *expr, onnxstream_status_t got,
                      onnxstream_status_t expected) {
    if (got == expected) return 1;
    test_fail(file, line, "%s returned %s, expected %s (last error: %s)", expr, onnxstream_status_name(got),
              onnxstream_status_name(expected), onnxstream_last_error());
    return 0;
}

int test_check_contains(const char *file, int line, const char *what, const char *text, const char *needle) {
    if (text && strstr(text, needle)) return 1;
    test_fail(file, line, "%s = \"%s\" does not contain \"%s\"", what, text ? text : "(null)", needle);
    return 0;
}

int test_check_float(const char *file, int line, const char *what, float got, float expected) {
    if (fabsf(got - expected) <= 1e-5f + 1e-5f * fabsf(expected)) return 1;
    test_fail(file, line, "%s = %.9g, expected %.9g", what, (double)got, (double)expected);
    return 0;
}

int test_finish(const char *name) {
    if (test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

onnxstream_model_t *test_new_model(int provider) {
    onnxstream_model_options_t options;
    onnxstream_model_t *model = NULL;
    onnxstream_model_options_init(&options);
    options.threads = 1;
    options.provider = provider;
    if (!CHECK_OK(onnxstream_model_create(&options, &model))) return NULL;
    return model;
}

int test_temp_dir(char *out, size_t capacity) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    if ((size_t)snprintf(out, capacity, "%s/onnxstream-capi-XXXXXX", base) >= capacity) return 0;
    if (!mkdtemp(out)) {
        test_fail(__FILE__, __LINE__, "mkdtemp(%s) failed", out);
        return 0;
    }
    return 1;
}

void test_remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0) rmdir(path);
    }
    closedir(d);
    rmdir(dir);
}

int test_write_file(const char *dir, const char *name, const void *data, size_t size) {
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size)) {
        test_fail(__FILE__, __LINE__, "cannot write %s", path);
        if (f) fclose(f);
        return 0;
    }
    return fclose(f) == 0;
}
