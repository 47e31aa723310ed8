"""NonMaxSuppression (opsets 10 and 11): corner and center box formats, flipped corners, score threshold, a limit on
the boxes per class, several batches and classes, identical boxes and equal scores (ONNX Runtime takes the lower
box index first), suppression by IOU, a single box, no limit input (nothing selected), a negative limit, float16
boxes and scores, thresholds pushed at run time.

The number of selected boxes depends on the values, and onnx shape inference leaves it open: every case declares
its output shape, computed by `selected_count` below (ONNX Runtime's output is checked against it too)."""

import numpy as np

from opcase import Case, const, weight

CASES = []

# ONNX's own example boxes ([y1, x1, y2, x2]) and their scores.
BOXES = [[0.0, 0.0, 1.0, 1.0], [0.0, 0.1, 1.0, 1.1], [0.0, -0.1, 1.0, 0.9],
         [0.0, 10.0, 1.0, 11.0], [0.0, 10.1, 1.0, 11.1], [0.0, 100.0, 1.0, 101.0]]
SCORES = [0.9, 0.75, 0.6, 0.95, 0.5, 0.3]


def _extent(box, center):
    if center:
        xc, yc, w, h = box
        return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    return min(box[0], box[2]), min(box[1], box[3]), max(box[0], box[2]), max(box[1], box[3])


def _iou(a, b):
    ih = min(a[2], b[2]) - max(a[0], b[0])
    iw = min(a[3], b[3]) - max(a[1], b[1])
    if ih <= 0 or iw <= 0:
        return 0.0
    inter = ih * iw
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def selected_count(boxes, scores, max_out, iou, score_thr, center):
    """How many boxes NonMaxSuppression selects (float64 here; the cases keep away from borderline IOUs)."""
    boxes = np.asarray(boxes, np.float64)
    scores = np.asarray(scores, np.float64)
    if max_out is None or max_out <= 0:
        return 0
    total = 0
    for b in range(boxes.shape[0]):
        ext = [_extent(bx, center) for bx in boxes[b]]
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [i for i in range(len(s)) if score_thr is None or s[i] > score_thr]
            order.sort(key=lambda i: (-s[i], i))
            kept = []
            for i in order:
                if len(kept) >= max_out:
                    break
                if all(_iou(ext[i], ext[k]) <= (iou or 0.0) for k in kept):
                    kept.append(i)
            total += len(kept)
    return total


def nms(name, boxes, scores, max_out=None, iou=None, score_thr=None, center=0, opset=11, runtime=(),
        dtype="float32", omit_max=False):
    """boxes (B, N, 4) and scores (B, C, N) as nested lists or arrays. `runtime`: names of the inputs pushed at run
    time (the rest are weights): any of boxes, scores, max, iou, score."""
    boxes = np.asarray(boxes, np.float32)
    scores = np.asarray(scores, np.float32)
    if dtype == "float16":  # the count on the values the op sees
        boxes, scores = boxes.astype(np.float16), scores.astype(np.float16)
    count = selected_count(boxes, scores, None if omit_max else max_out, iou, score_thr, center)

    def put(key, value):
        return value if key in runtime else weight(value)

    inputs = [put("boxes", const(boxes, dtype)), put("scores", const(scores, dtype))]
    optional = [("max", None if omit_max or max_out is None else const([max_out], "int64")),
                ("iou", None if iou is None else const([iou], "float32")),
                ("score", None if score_thr is None else const([score_thr], "float32"))]
    while optional and optional[-1][1] is None:
        optional.pop()
    inputs += [None if v is None else put(k, v) for k, v in optional]
    ref = f16_through_f32 if dtype == "float16" else None
    CASES.append(Case(name, "NonMaxSuppression", inputs, attrs=dict(center_point_box=center), opset=opset,
                      out_shapes=[(count, 3)], reference=ref))


def f16_through_f32(helper, node):
    """ONNX has NonMaxSuppression for float32 only: the reference casts float16 boxes and scores to float32 first,
    which is what the engine computes in."""
    from onnx import TensorProto
    nodes, ins = [], list(node.input)
    for i in (0, 1):
        nodes.append(helper.make_node("Cast", [ins[i]], [ins[i] + "_f32"], to=TensorProto.FLOAT))
        ins[i] += "_f32"
    op = helper.make_node(node.op_type, ins, list(node.output))
    op.attribute.extend(node.attribute)
    return nodes + [op]


def to_center(boxes):
    b = np.asarray(boxes, np.float32)
    return np.stack([(b[..., 1] + b[..., 3]) / 2, (b[..., 0] + b[..., 2]) / 2,
                     b[..., 3] - b[..., 1], b[..., 2] - b[..., 0]], axis=-1)


def flipped(boxes):
    b = np.asarray(boxes, np.float32).copy()
    b[..., [0, 1, 2, 3]] = b[..., [2, 3, 0, 1]]
    return b


# ONNX's node tests, as weights.
nms("nms_suppress_by_iou", [BOXES], [[SCORES]], 3, 0.5, 0.0)
nms("nms_center_point_box", to_center([BOXES]), [[SCORES]], 3, 0.5, 0.0, center=1)
nms("nms_flipped_coordinates", flipped([BOXES]), [[SCORES]], 3, 0.5, 0.0)
nms("nms_identical_boxes", [[[0.0, 0.0, 1.0, 1.0]] * 10], [[[0.9] * 10]], 3, 0.5, 0.0)
nms("nms_limit_output_size", [BOXES], [[SCORES]], 2, 0.5, 0.0)
nms("nms_single_box", [[[0.0, 0.0, 1.0, 1.0]]], [[[0.9]]], 3, 0.5, 0.0)
nms("nms_score_threshold", [BOXES], [[SCORES]], 3, 0.5, 0.4)
nms("nms_two_batches", [BOXES, BOXES], [[SCORES], [SCORES]], 2, 0.5, 0.0)
nms("nms_two_classes", [BOXES], [[SCORES, SCORES[::-1]]], 2, 0.5, 0.0)
nms("nms_opset10", [BOXES], [[SCORES]], 3, 0.5, 0.0, opset=10)

# Equal scores on boxes that do not overlap: every box kept, lower index first among equals.
nms("nms_equal_scores", [[[0, 2 * i, 1, 2 * i + 1] for i in range(8)]],
    [[[0.5, 0.7, 0.5, 0.7, 0.5, 0.9, 0.7, 0.5]]], 10, 0.5)
# Equal scores and overlapping boxes: which box survives depends on the tie order.
nms("nms_equal_scores_overlap", [[[0, 0, 1, 1], [0, 0.05, 1, 1.05], [0, 0.1, 1, 1.1], [0, 3, 1, 4]]],
    [[[0.6, 0.6, 0.6, 0.6]]], 4, 0.5)
# No iou_threshold (0): any overlap suppresses; no score_threshold input: every box is a candidate.
nms("nms_default_iou", [BOXES], [[SCORES]], 10)
# No max_output_boxes_per_class: nothing selected; a negative one: nothing selected (ONNX Runtime).
nms("nms_no_limit_input", [BOXES], [[SCORES]], omit_max=True)
nms("nms_negative_limit", [BOXES], [[SCORES]], -1, 0.5)
nms("nms_zero_limit", [BOXES], [[SCORES]], 0, 0.5)
nms("nms_omitted_iou", [BOXES], [[SCORES]], 4, None, 0.7)
# Every score at or below the threshold (strictly above is kept).
nms("nms_all_below_threshold", [BOXES], [[SCORES]], 3, 0.5, 0.95)
nms("nms_iou_one", [BOXES], [[SCORES]], 6, 1.0)
# Zero-area boxes suppress nothing.
nms("nms_zero_area", [[[0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 1, 1]]], [[[0.9, 0.8, 0.7]]], 3, 0.1)

# Random boxes: two batches, three classes, scores above and below the threshold.
_rng = np.random.default_rng(7)
_corner = _rng.uniform(0, 10, size=(2, 40, 2)).astype(np.float32)
_size = _rng.uniform(0.5, 4, size=(2, 40, 2)).astype(np.float32)
RANDOM_BOXES = np.concatenate([_corner, _corner + _size], axis=-1)
RANDOM_SCORES = _rng.uniform(0, 1, size=(2, 3, 40)).astype(np.float32)
nms("nms_random", RANDOM_BOXES, RANDOM_SCORES, 5, 0.4, 0.2)
nms("nms_random_center", to_center(RANDOM_BOXES), RANDOM_SCORES, 8, 0.3, center=1)
nms("nms_random_flipped", flipped(RANDOM_BOXES), RANDOM_SCORES, 100, 0.6, 0.1)

# Inputs pushed at run time (the declared output shape is used, and checked by the run).
nms("nms_runtime_boxes_scores", RANDOM_BOXES, RANDOM_SCORES, 5, 0.4, 0.2, runtime=("boxes", "scores"))
nms("nms_runtime_all", [BOXES, BOXES], [[SCORES], [SCORES]], 2, 0.5, 0.0,
    runtime=("boxes", "scores", "max", "iou", "score"))
nms("nms_runtime_thresholds", [BOXES], [[SCORES, SCORES[::-1]]], 3, 0.5, 0.4, runtime=("iou", "score"))

# float16 boxes and scores (ONNX defines float32 only; the engine widens them).
nms("nms_f16", [BOXES], [[SCORES]], 3, 0.5, 0.0, dtype="float16")
nms("nms_f16_random", RANDOM_BOXES, RANDOM_SCORES, 5, 0.4, 0.2, dtype="float16", runtime=("boxes", "scores"))
