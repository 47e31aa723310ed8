#include "ops/harness.h"

ONNXSTREAM_OP_FAMILY_TEST(bitwise)
