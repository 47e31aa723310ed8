/* Files shared by the end-to-end tests: reading a whole file, and the real YOLOv8n's input with ONNX
 * Runtime's output for it from SHARED_DIR/data/yolov8n. */
#ifndef ONNXSTREAM_TESTS_YOLOV8N_DATA_H
#define ONNXSTREAM_TESTS_YOLOV8N_DATA_H

#include <stddef.h>

#define YOLOV8N_INPUT_FLOATS ((size_t)3 * 640 * 640)
#define YOLOV8N_OUTPUT_FLOATS ((size_t)84 * 8400)

/* The whole file in a malloc'ed buffer (free it), its size in *size; NULL when it cannot be read. */
void *read_file(const char *path, size_t *size);

/* Input images (1,3,640,640) and expected output0 (1,84,8400), malloc'ed (free both). Returns 0, with a
 * message on stderr, when a file is missing or has the wrong size. */
int load_yolov8n_data(const char *shared_dir, float **input, float **expected);

#endif
