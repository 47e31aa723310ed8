// Antialiased Resize windows (see resize_antialias.h). The arithmetic follows ONNX Runtime's CPU kernel step
// by step in float32, so the weights agree with its float path to the last bit or so:
//  - the filter's half-width is 1 (linear, a triangle) or 2 (cubic, Keys' kernel with cubic_coeff_a), times
//    1/scale when downscaling; the filter is evaluated at (input index - source coordinate) * scale;
//  - output o reads the input indices whose pixel centres fall within the half-width of its own centre
//    (source coordinate + 0.5), at most 2 * ceil(half-width) + 1 of them;
//  - outside the input the taps are either dropped (exclude_outside) or their weights are added to the first
//    or last input index (the border repeats, as the plain linear and cubic paths clamp indices);
//  - the weights are divided by the sum of all the filter's taps, inside and outside the input alike.
#include "ops/resize_antialias.h"

#include <algorithm>
#include <cmath>

namespace onnxstream {

namespace {

float filter_at(AntialiasFilter filter, float cubic_a, float x) {
    x = std::fabs(x);
    if (filter == AntialiasFilter::Linear) return x < 1.0f ? 1.0f - x : 0.0f;
    if (x < 1.0f) return ((cubic_a + 2.0f) * x - (cubic_a + 3.0f)) * x * x + 1.0f;
    if (x < 2.0f) return (((x - 5.0f) * x + 8.0f) * x - 4.0f) * cubic_a;
    return 0.0f;
}

} // namespace

AntialiasWindows antialias_windows(AntialiasFilter filter, float cubic_a, bool exclude_outside, int64_t in,
                                   float scale, const std::vector<float> &coords) {
    const float stretch = 1.0f / scale;
    const float half_width = filter == AntialiasFilter::Linear ? 1.0f : 2.0f;
    const float support = stretch >= 1.0f ? half_width * stretch : half_width;
    const int64_t window = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
    const float step = stretch >= 1.0f ? 1.0f / stretch : 1.0f;

    const size_t out = coords.size();
    AntialiasWindows w;
    w.taps = static_cast<size_t>(window);
    w.first.resize(out);
    w.count.resize(out);
    w.weight.assign(out * w.taps, 0.0f);
    std::vector<float> buf(w.taps);
    for (size_t o = 0; o < out; ++o) {
        const float center = coords[o] + 0.5f;
        const int64_t lo = static_cast<int64_t>(std::floor(center - support + 0.5f));
        const int64_t hi = lo + std::clamp<int64_t>(
                                    static_cast<int64_t>(std::floor(center + support + 0.5f)) - lo, 0, window);
        const int64_t lo_in = std::clamp<int64_t>(lo, 0, in), hi_in = std::clamp<int64_t>(hi, 0, in);
        // The taps evaluated: the whole window, or only its part inside the input.
        const int64_t start = exclude_outside ? lo_in : lo;
        const int64_t n = (exclude_outside ? hi_in : hi) - start;
        std::fill(buf.begin(), buf.end(), 0.0f);
        float total = 0.0f;
        for (int64_t k = 0; k < n; ++k) {
            const float v =
                filter_at(filter, cubic_a, (static_cast<float>(k + start) - center + 0.5f) * step);
            buf[static_cast<size_t>(k)] = v;
            total += v;
        }
        if (!exclude_outside && lo_in < hi_in) {
            // Taps before index 0 go onto index 0, taps past the end onto index in - 1; then the row is
            // shifted so that it starts at index 0's tap.
            const int64_t before = std::clamp<int64_t>(-start, 0, n - 1);
            for (int64_t k = 0; k < before; ++k) buf[static_cast<size_t>(before)] += buf[static_cast<size_t>(k)];
            const int64_t after = std::clamp<int64_t>(n + start - in, 0, n - 1);
            for (int64_t k = n - after; k < n; ++k)
                buf[static_cast<size_t>(n - after - 1)] += buf[static_cast<size_t>(k)];
            if (before > 0 || after > 0)
                for (int64_t k = 0; k < hi_in - lo_in; ++k)
                    buf[static_cast<size_t>(k)] = buf[static_cast<size_t>(k + before)];
        }
        const float norm = total == 0.0f ? 1.0f : 1.0f / total;
        const int64_t count = hi_in - lo_in;
        w.first[o] = lo_in;
        w.count[o] = static_cast<uint32_t>(std::max<int64_t>(0, count));
        for (int64_t k = 0; k < count; ++k)
            w.weight[o * w.taps + static_cast<size_t>(k)] = buf[static_cast<size_t>(k)] * norm;
    }
    return w;
}

} // namespace onnxstream
