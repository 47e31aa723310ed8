// NonMaxSuppression (opsets 10, 11).
//
// boxes (B, N, 4) and scores (B, C, N), float32 or float16 (computed in float32). For each batch b and class c
// the boxes whose score is above score_threshold (every box without that input) are taken by descending score,
// equal scores by ascending box index (ONNX Runtime's order), and a box is kept unless its intersection over
// union with a box already kept for (b, c) is above iou_threshold, until max_output_boxes_per_class are kept.
// The output (num_selected, 3) lists [b, c, box] in batch, class, then selection order. max_output_boxes_per_class
// absent, zero or negative selects nothing, as in ONNX Runtime; an iou_threshold outside [0, 1] is an error there
// and here. A box is [y1, x1, y2, x2] with either corner first (center_point_box 0) or [x_center, y_center,
// width, height] (center_point_box 1); a box of no area suppresses nothing. NaN scores rank below every number.
//
// num_selected depends on every input's values: it is exact while planning when they are all weights (or pinned
// with the converter's --input-value), or when nothing can be selected; otherwise model.txt's declared shape is
// used and the run checks that it is what the boxes give.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/registry.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

struct NmsParams {
    int64_t max_per_class = 0;
    float iou_threshold = 0;
    bool has_score_threshold = false;
    float score_threshold = 0;
};

struct NmsDims {
    int64_t batches = 0, classes = 0, boxes = 0;
};

// A box as its sorted extents and area, computed once per box rather than once per pair compared.
struct Extent {
    float y_min, x_min, y_max, x_max, area;
};

bool center_point_box(const std::string &where, const Attributes &attrs) {
    const int64_t v = attrs.get_int("center_point_box", 0);
    if (v != 0 && v != 1) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": center_point_box is ", v, ", expected 0 or 1");
    return v == 1;
}

NmsDims check_shapes(const InferContext &ctx) {
    const Shape &b = ctx.input(0).shape, &s = ctx.input(1).shape;
    if (b.size() != 3 || b[2] != 4)
        ctx.error("boxes have shape ", shape_str(b), "; expected (num_batches, spatial_dimension, 4)");
    if (s.size() != 3)
        ctx.error("scores have shape ", shape_str(s), "; expected (num_batches, num_classes, spatial_dimension)");
    if (s[0] != b[0] || s[2] != b[1])
        ctx.error("scores ", shape_str(s), " do not match boxes ", shape_str(b),
                  ": expected (", b[0], ", num_classes, ", b[1], ")");
    return NmsDims{b[0], s[1], b[1]};
}

// Inputs 2..4 hold one value each (ONNX says scalar; a 1-element tensor is common and accepted).
void require_single(const InferContext &ctx, size_t i, const char *what, std::initializer_list<DType> dtypes) {
    if (!ctx.has_input(i)) return;
    ctx.require_dtype(i, dtypes);
    const Shape &s = ctx.input(i).shape;
    if (s.size() > 1 || shape_numel(s) != 1)
        ctx.error(what, " (input ", i, ") must be a scalar or a 1-element 1-D tensor, got shape ", shape_str(s));
}

// The thresholds from inputs 2..4, each present one given by `input(i)` (nullptr: absent or, while planning,
// not known); an iou_threshold outside [0, 1] is an error of `status`.
template <typename InputFn> NmsParams read_params(const std::string &where, Status status, InputFn input) {
    NmsParams p;
    if (const Tensor *t = input(2)) p.max_per_class = std::max<int64_t>(int_at(*t, 0), 0);
    if (const Tensor *t = input(3)) {
        p.iou_threshold = float_at(*t, 0);
        if (!(p.iou_threshold >= 0 && p.iou_threshold <= 1))
            fail(status, where, ": iou_threshold is ", p.iou_threshold, "; expected a value in [0, 1]");
    }
    if (const Tensor *t = input(4)) {
        p.has_score_threshold = true;
        p.score_threshold = float_at(*t, 0);
    }
    return p;
}

// A float32 view of a float32 or float16 tensor (float16 widened into `storage`).
const float *as_floats(const Tensor &t, std::vector<float> &storage) {
    if (t.dtype() == DType::F32) return t.data<float>();
    storage.resize(static_cast<size_t>(t.numel()));
    const uint16_t *h = t.data<uint16_t>();
    for (size_t i = 0; i < storage.size(); ++i) storage[i] = half_to_float(h[i]);
    return storage.data();
}

Extent extent_of(const float *box, bool center) {
    Extent e;
    if (center) {
        const float half_w = box[2] / 2, half_h = box[3] / 2;
        e.x_min = box[0] - half_w;
        e.x_max = box[0] + half_w;
        e.y_min = box[1] - half_h;
        e.y_max = box[1] + half_h;
    } else {
        e.y_min = std::min(box[0], box[2]);
        e.y_max = std::max(box[0], box[2]);
        e.x_min = std::min(box[1], box[3]);
        e.x_max = std::max(box[1], box[3]);
    }
    e.area = (e.x_max - e.x_min) * (e.y_max - e.y_min);
    return e;
}

// ONNX Runtime's test, step by step in float32 so that borderline pairs resolve the same way.
bool suppresses(const Extent &a, const Extent &b, float iou_threshold) {
    const float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
    if (ix_max <= ix_min) return false;
    const float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
    if (iy_max <= iy_min) return false;
    const float inter = (ix_max - ix_min) * (iy_max - iy_min);
    if (inter <= 0) return false;
    const float uni = a.area + b.area - inter;
    if (a.area <= 0 || b.area <= 0 || uni <= 0) return false;
    return inter / uni > iou_threshold;
}

// Selected box indices of one (batch, class).
std::vector<int64_t> select_class(const float *scores, const Extent *extents, int64_t n, const NmsParams &p) {
    std::vector<int64_t> order;
    order.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        if (!p.has_score_threshold || scores[i] > p.score_threshold) order.push_back(i);
    // A strict order on (score, index) with NaN last, so equal scores never depend on the sort's implementation.
    std::sort(order.begin(), order.end(), [scores](int64_t a, int64_t b) {
        const float sa = scores[a], sb = scores[b];
        const bool na = std::isnan(sa), nb = std::isnan(sb);
        if (na != nb) return nb;
        if (!na && sa != sb) return sa > sb;
        return a < b;
    });
    std::vector<int64_t> kept;
    for (int64_t cand : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_per_class) break;
        bool keep = true;
        for (int64_t k : kept)
            if (suppresses(extents[cand], extents[k], p.iou_threshold)) {
                keep = false;
                break;
            }
        if (keep) kept.push_back(cand);
    }
    return kept;
}

// The selected [batch, class, box] triples, flattened.
std::vector<int64_t> select(pthreadpool_t pool, const Tensor &boxes_t, const Tensor &scores_t, const NmsDims &d,
                            bool center, const NmsParams &p) {
    if (p.max_per_class == 0 || d.batches * d.classes * d.boxes == 0) return {};
    std::vector<float> box_store, score_store;
    const float *boxes = as_floats(boxes_t, box_store), *scores = as_floats(scores_t, score_store);
    std::vector<Extent> extents(static_cast<size_t>(d.batches * d.boxes));
    for (size_t i = 0; i < extents.size(); ++i) extents[i] = extent_of(boxes + 4 * i, center);
    const size_t pairs = static_cast<size_t>(d.batches * d.classes);
    std::vector<std::vector<int64_t>> kept(pairs);
    parallel_for(pool, pairs, 1, [&](size_t begin, size_t end) {
        for (size_t bc = begin; bc < end; ++bc) {
            const int64_t b = static_cast<int64_t>(bc) / d.classes;
            kept[bc] = select_class(scores + static_cast<int64_t>(bc) * d.boxes, extents.data() + b * d.boxes,
                                    d.boxes, p);
        }
    });
    std::vector<int64_t> out;
    for (size_t bc = 0; bc < pairs; ++bc)
        for (int64_t box : kept[bc]) {
            out.push_back(static_cast<int64_t>(bc) / d.classes);
            out.push_back(static_cast<int64_t>(bc) % d.classes);
            out.push_back(box);
        }
    return out;
}

std::vector<TensorInfo> nms_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 5);
    if (ctx.output_count() != 1) ctx.error("has 1 output, got ", ctx.output_count());
    ctx.require_dtype(0, {DType::F32, DType::F16});
    ctx.require_dtype(1, {DType::F32, DType::F16});
    require_single(ctx, 2, "max_output_boxes_per_class", {DType::I64});
    require_single(ctx, 3, "iou_threshold", {DType::F32, DType::F16});
    require_single(ctx, 4, "score_threshold", {DType::F32, DType::F16});
    const bool center = center_point_box(ctx.node.where, ctx.attrs());
    const NmsDims d = check_shapes(ctx);

    bool all_known = true;
    for (size_t i = 0; i < ctx.input_count(); ++i) all_known = all_known && (!ctx.has_input(i) || ctx.constant(i));
    const bool max_known = !ctx.has_input(2) || ctx.constant(2);
    // Checks the thresholds known while planning even when the others are not.
    const NmsParams p = read_params(ctx.node.where, ONNXSTREAM_ERR_INVALID_MODEL, [&](size_t i) { return ctx.constant(i); });
    const bool none = (max_known && p.max_per_class == 0) || d.batches * d.classes * d.boxes == 0;
    if (none) return {TensorInfo{DType::I64, Shape{0, 3}, {}}};
    if (all_known) {
        const auto sel = select(nullptr, *ctx.constant(0), *ctx.constant(1), d, center, p);
        return {TensorInfo{DType::I64, Shape{static_cast<int64_t>(sel.size() / 3), 3}, {}}};
    }
    const Shape &declared = ctx.declared_shape(0);
    if (declared.size() != 2 || declared[1] != 3)
        ctx.error("model.txt declares output shape ", shape_str(declared),
                  " but NonMaxSuppression gives (num_selected, 3)");
    int64_t most = d.batches * d.classes * d.boxes;
    if (max_known) most = d.batches * d.classes * std::min(d.boxes, p.max_per_class);
    if (declared[0] > most)
        ctx.error("model.txt declares ", declared[0], " selected boxes but at most ", most, " can be selected");
    return {TensorInfo{DType::I64, declared, {}}};
}

void nms_run(RunContext &ctx) {
    const Tensor &boxes = ctx.input(0), &scores = ctx.input(1);
    const NmsDims d{boxes.dim(0), scores.dim(1), boxes.dim(1)};
    const NmsParams p = read_params(ctx.node.where, ONNXSTREAM_ERR_INVALID_ARGUMENT,
                                    [&](size_t i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; });
    const std::vector<int64_t> sel =
        select(ctx.pool(), boxes, scores, d, center_point_box(ctx.node.where, ctx.attrs()), p);
    const int64_t count = static_cast<int64_t>(sel.size() / 3);
    const Shape &planned = ctx.output_info(0).shape;
    if (planned[0] != count)
        ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "selects ", count, " boxes but model.txt declares ",
                  shape_str(planned), "; declare (", count, ",3) or fix the inputs the selection depends on");
    Tensor &out = ctx.alloc_output(0, DType::I64, Shape{count, 3});
    std::copy(sel.begin(), sel.end(), out.data<int64_t>());
}

} // namespace

void register_nms_ops(Registry &r) {
    r.add("NonMaxSuppression", nms_infer, nms_run).with_reads_weights_exactly().with_shape_value_inputs(0x1f);
}

} // namespace onnxstream
