// One convolution, two kernel libraries: XNNPACK (the engine's kernels, through src/xnnpack/conv.h) and
// oneDNN (Debian's libdnnl-dev, a candidate second backend), on the shapes where the engine's Conv is
// furthest behind ONNX Runtime (tests/bench/ort_op_profile.py), plus XNNPACK split into operators of CHUNK
// output channels (as the engine runs a streamed weight) and of SPLIT input channels (partial sums added);
// 0 means all of them.
// Float32, channels-last activations (the engine's layout), the weights prepared once and not timed
// (packing, oneDNN's reorder to its blocked layout), THREADS threads each (XNNPACK: pthreadpool; oneDNN:
// OpenMP). Prints the best of RUNS timings, GFLOP/s, and how far the outputs are from XNNPACK's.
// Built only when libdnnl-dev is installed; a benchmark, not a test.
// Usage: conv_backends [threads=2] [runs=5] [split=256] [chunk=0] [SHAPE...], SHAPE = CxHxW:OxKHxKW[/STRIDE],
// e.g. 1280x8x8:1280x3x3
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <memory>
#include <string>
#include <vector>

#include <omp.h>
#include <pthreadpool.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "xnnpack/conv.h"
#include "../common/best_ms.h"

using onnxstream::bench::best_ms;

namespace {

struct Shape {
    long c, h, w, o, kh, kw, stride;
    long out_h() const { return (h + 2 * (kh / 2) - kh) / stride + 1; }
    long out_w() const { return (w + 2 * (kw / 2) - kw) / stride + 1; }
    double gflop() const { return 2.0 * o * c * kh * kw * out_h() * out_w() / 1e9; }
};

bool parse(const char *text, Shape &s) {
    s.stride = 1;
    return std::sscanf(text, "%ldx%ldx%ld:%ldx%ldx%ld/%ld", &s.c, &s.h, &s.w, &s.o, &s.kh, &s.kw, &s.stride) >= 6 &&
           s.c > 0 && s.h > 0 && s.w > 0 && s.o > 0 && s.kh > 0 && s.kw > 0 && s.stride > 0;
}

// oneDNN's primitive for one convolution, same padding (kernel / 2) on every side, channels-last activations.
dnnl::convolution_forward::primitive_desc onednn_conv(const dnnl::engine &eng, const Shape &s) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc src({1, s.c, s.h, s.w}, dt::f32, tag::nhwc);
    const dnnl::memory::desc wei({s.o, s.c, s.kh, s.kw}, dt::f32, tag::any); // its own blocked layout
    const dnnl::memory::desc bias({s.o}, dt::f32, tag::x);
    const dnnl::memory::desc dst({1, s.o, s.out_h(), s.out_w()}, dt::f32, tag::nhwc);
    const dnnl::memory::dims strides{s.stride, s.stride}, pad{s.kh / 2, s.kw / 2};
#if DNNL_VERSION_MAJOR >= 3
    return {eng, dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wei, bias, dst,
            strides, pad, pad};
#else
    return {{dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wei, bias, dst, strides,
             pad, pad},
            eng};
#endif
}

} // namespace

int main(int argc, char **argv) {
    const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
    const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
    const long split = argc > 3 ? std::atol(argv[3]) : 256;
    const long chunk = argc > 4 ? std::atol(argv[4]) : 0;
    std::vector<Shape> shapes;
    for (int i = 5; i < argc; ++i) {
        Shape s{};
        if (!parse(argv[i], s)) {
            std::fprintf(stderr, "conv_backends: bad shape '%s' (CxHxW:OxKHxKW[/STRIDE])\n", argv[i]);
            return 2;
        }
        shapes.push_back(s);
    }
    if (threads < 1 || runs < 1 || split < 0 || chunk < 0) {
        std::fprintf(stderr, "usage: conv_backends [threads=2] [runs=5] [split=256] [chunk=0] [CxHxW:OxKHxKW[/STRIDE]...]\n");
        return 2;
    }
    if (shapes.empty()) // SD 1.5's UNet at 512x512 and YOLOv8n: the largest gaps to ONNX Runtime
        shapes = {{1280, 8, 8, 1280, 3, 3, 1},   {1280, 16, 16, 1280, 3, 3, 1}, {640, 32, 32, 640, 3, 3, 1},
                  {1920, 32, 32, 640, 3, 3, 1},  {320, 64, 64, 320, 3, 3, 1},   {1280, 16, 16, 1280, 1, 1, 1},
                  {16, 160, 160, 16, 3, 3, 1},   {3, 640, 640, 16, 3, 3, 2},    {32, 80, 80, 32, 3, 3, 1}};
    omp_set_num_threads(threads);
    pthreadpool_t pool = pthreadpool_create(static_cast<size_t>(threads));
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(eng);
    std::printf("%d threads, best of %d runs, oneDNN %d.%d.%d\n\n", threads, runs, dnnl_version()->major,
                dnnl_version()->minor, dnnl_version()->patch);
    std::printf("ms per convolution and GFLOP/s; split: XNNPACK in operators of %ld output x %ld input channels\n"
                "(0: all); diff: the largest difference from XNNPACK's output, relative to its largest value\n\n",
                chunk, split);
    std::printf("%-24s %13s %13s %13s %9s %9s\n", "input:weight/stride", "XNNPACK", "split", "oneDNN",
                "diff spl", "diff oDNN");
    std::mt19937 rng(1);
    for (const Shape &s : shapes) {
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> x(static_cast<size_t>(s.c * s.h * s.w)), oihw(static_cast<size_t>(s.o * s.c * s.kh * s.kw)),
            bias(static_cast<size_t>(s.o));
        for (float &v : x) v = dist(rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(s.c * s.kh * s.kw));
        for (float &v : oihw) v = dist(rng) * scale;
        for (float &v : bias) v = dist(rng);
        const size_t out_n = static_cast<size_t>(s.o * s.out_h() * s.out_w());

        // XNNPACK takes the kernel in OHWI.
        std::vector<float> ohwi(oihw.size());
        for (long o = 0; o < s.o; ++o)
            for (long i = 0; i < s.c; ++i)
                for (long k = 0; k < s.kh * s.kw; ++k)
                    ohwi[static_cast<size_t>((o * s.kh * s.kw + k) * s.c + i)] =
                        oihw[static_cast<size_t>((o * s.c + i) * s.kh * s.kw + k)];
        onnxstream::xnn::Conv2dShape xs;
        xs.in_h = static_cast<size_t>(s.h);
        xs.in_w = static_cast<size_t>(s.w);
        xs.kernel_h = static_cast<uint32_t>(s.kh);
        xs.kernel_w = static_cast<uint32_t>(s.kw);
        xs.stride_h = xs.stride_w = static_cast<uint32_t>(s.stride);
        xs.pad_top = xs.pad_bottom = static_cast<uint32_t>(s.kh / 2);
        xs.pad_left = xs.pad_right = static_cast<uint32_t>(s.kw / 2);
        xs.group_in = static_cast<size_t>(s.c);
        xs.group_out = static_cast<size_t>(s.o);
        onnxstream::xnn::Conv2dOperator xnn_op(xs, ohwi.data(), bias.data());
        std::vector<float> y_xnn(out_n), y_dnnl(out_n);
        const double xnn_ms = best_ms(runs, [&] { xnn_op.run(1, xs.in_h, xs.in_w, x.data(), y_xnn.data(), pool); });

        // XNNPACK again as the engine runs a streamed weight: one operator per `chunk` output channels
        // (each writing its slice of every output pixel) and per `split` input channels (each reading its
        // slice of the input pixels, input_pixel_stride), the partial sums added in float32.
        const long oc = chunk ? chunk : s.o, ic = split ? split : s.c;
        struct Part {
            std::unique_ptr<onnxstream::xnn::Conv2dOperator> op;
            long o0, rows, i0;
        };
        std::vector<Part> parts;
        for (long o0 = 0; o0 < s.o; o0 += oc)
            for (long i0 = 0; i0 < s.c; i0 += ic) {
                const long rows = std::min(oc, s.o - o0), width = std::min(ic, s.c - i0), taps = s.kh * s.kw;
                std::vector<float> block(static_cast<size_t>(rows * taps * width));
                for (long q = 0; q < rows * taps; ++q) {
                    const float *from = &ohwi[static_cast<size_t>((o0 * taps + q) * s.c + i0)];
                    std::copy(from, from + width, &block[static_cast<size_t>(q * width)]);
                }
                onnxstream::xnn::Conv2dShape part = xs;
                part.group_in = static_cast<size_t>(width);
                part.group_out = static_cast<size_t>(rows);
                part.input_pixel_stride = static_cast<size_t>(s.c);
                part.output_pixel_stride = static_cast<size_t>(i0 == 0 ? s.o : rows);
                parts.push_back({std::make_unique<onnxstream::xnn::Conv2dOperator>(
                                     part, block.data(), i0 == 0 ? bias.data() + o0 : nullptr),
                                 o0, rows, i0});
            }
        std::vector<float> y_split(out_n), partial(out_n);
        const size_t pixels = out_n / static_cast<size_t>(s.o);
        const double split_ms = best_ms(runs, [&] {
            for (const Part &p : parts) {
                float *to = p.i0 ? partial.data() : y_split.data() + p.o0;
                p.op->run(1, xs.in_h, xs.in_w, x.data() + p.i0, to, pool);
                if (!p.i0) continue;
                for (size_t i = 0; i < pixels; ++i) {
                    float *y = &y_split[i * static_cast<size_t>(s.o) + static_cast<size_t>(p.o0)];
                    const float *add = &partial[i * static_cast<size_t>(p.rows)];
                    for (long j = 0; j < p.rows; ++j) y[j] += add[j];
                }
            }
        });

        const auto pd = onednn_conv(eng, s);
        dnnl::memory user_w({{s.o, s.c, s.kh, s.kw}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::oihw},
                            eng, oihw.data());
        dnnl::memory w(pd.weights_desc(), eng);
        dnnl::reorder(user_w, w).execute(stream, user_w, w);
        dnnl::memory src(pd.src_desc(), eng, x.data()), b(pd.bias_desc(), eng, bias.data()),
            dst(pd.dst_desc(), eng, y_dnnl.data());
        dnnl::convolution_forward conv(pd);
        const double dnnl_ms = best_ms(runs, [&] {
            conv.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
            stream.wait();
        });

        double peak = 0;
        for (float v : y_xnn) peak = std::max(peak, static_cast<double>(std::fabs(v)));
        auto rel_diff = [&](const std::vector<float> &y) {
            double d = 0;
            for (size_t i = 0; i < out_n; ++i) d = std::max(d, static_cast<double>(std::fabs(y[i] - y_xnn[i])));
            return d / std::max(peak, 1e-30);
        };
        char name[64];
        std::snprintf(name, sizeof name, "%ldx%ldx%ld:%ldx%ldx%ld/%ld", s.c, s.h, s.w, s.o, s.kh, s.kw, s.stride);
        const double g = s.gflop() * 1e3;
        std::printf("%-24s %8.3f %4.0f %8.3f %4.0f %8.3f %4.0f %9.1e %9.1e\n", name, xnn_ms, g / xnn_ms, split_ms,
                    g / split_ms, dnnl_ms, g / dnnl_ms, rel_diff(y_split), rel_diff(y_dnnl));
        std::fflush(stdout);
    }
    pthreadpool_destroy(pool);
    return 0;
}
