#include "yolov8n_data.h"

#include <stdio.h>
#include <stdlib.h>

void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = n > 0 ? (size_t)n : 0;
    return buf;
}

int load_yolov8n_data(const char *shared_dir, float **input, float **expected) {
    char in_path[8192], out_path[8192];
    snprintf(in_path, sizeof in_path, "%s/data/yolov8n/input_images_1x3x640x640_f32.bin", shared_dir);
    snprintf(out_path, sizeof out_path, "%s/data/yolov8n/expected_output0_1x84x8400_f32.bin", shared_dir);
    size_t in_size = 0, out_size = 0;
    *input = (float *)read_file(in_path, &in_size);
    *expected = (float *)read_file(out_path, &out_size);
    if (*input && *expected && in_size == YOLOV8N_INPUT_FLOATS * sizeof(float) &&
        out_size == YOLOV8N_OUTPUT_FLOATS * sizeof(float))
        return 1;
    fprintf(stderr, "cannot read the YOLOv8n reference data under %s/data/yolov8n\n", shared_dir);
    free(*input);
    free(*expected);
    *input = *expected = NULL;
    return 0;
}
