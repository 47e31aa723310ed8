#include "graph/model_txt.h"

#include <algorithm>
#include <cmath>

#include "tensor/int4_blocks.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream {

namespace {

// Every dtype is at most 8 bytes, so byte sizes of shapes within this bound fit in int64_t.
constexpr int64_t kMaxElements = int64_t(1) << 60;

std::string hex_byte(unsigned char c) {
    static const char digits[] = "0123456789ABCDEF";
    return {digits[c >> 4], digits[c & 15]};
}

class LineParser {
public:
    LineParser(const std::string &source, int line) : source_(source), line_(line) {}

    [[noreturn]] void error(int column, const std::string &what) const {
        fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", line_, ":", column, ": ", what);
    }

    // Only canonical decimals are accepted (no sign, spaces or leading zeros): anything else would not
    // be written back byte for byte. The element count is bounded so that byte sizes cannot overflow.
    // allow_any: '?' (kAnyDim) is allowed, as in activations of a resizable model; weights are static.
    Shape parse_dims(std::string_view text, int column, bool allow_any = false) const {
        Shape shape;
        if (text.empty()) return shape; // scalar
        int col = column;
        for (auto part : split(text, ',')) {
            if (allow_any && part == "?") {
                shape.push_back(kAnyDim);
                col += 2;
                continue;
            }
            bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos &&
                          (part.size() == 1 || part[0] != '0');
            if (!digits)
                error(col, cat("bad dimension '", part, "' (expected a non-negative integer",
                               allow_any ? " or '?'" : "", ")"));
            int64_t d = 0;
            if (!parse_int64(part, d)) error(col, cat("dimension ", part, " is too large"));
            shape.push_back(d);
            col += static_cast<int>(part.size()) + 1;
        }
        if (std::find(shape.begin(), shape.end(), 0) == shape.end()) {
            int64_t n = 1;
            for (int64_t d : shape) {
                if (d == kAnyDim) continue;
                if (n > kMaxElements / d)
                    error(column, cat("shape ", shape_str(shape), " has more than 2^60 elements"));
                n *= d;
            }
        }
        return shape;
    }

    // One entry of an input/output list; column is where `text` starts.
    TensorRef parse_ref(std::string_view text, int column, bool allow_empty) const {
        TensorRef ref;
        ref.column = column;
        if (text.empty()) {
            if (!allow_empty) error(column, "empty output name");
            ref.present = false;
            return ref;
        }
        size_t open = text.find('(');
        if (open == std::string_view::npos || text.back() != ')')
            error(column, cat("expected NAME(shape) but found '", text, "'"));
        if (open == 0) error(column, "tensor reference without a name");
        ref.name = std::string(text.substr(0, open));
        std::string_view inner = text.substr(open + 1, text.size() - open - 2);
        int inner_col = column + static_cast<int>(open) + 1;
        size_t colon = inner.find(':');
        if (colon == std::string_view::npos) {
            ref.shape = parse_dims(inner, inner_col, /*allow_any=*/true);
            return ref;
        }
        ref.is_weight = true;
        std::string_view type = inner.substr(0, colon);
        size_t bracket = type.find('[');
        if (bracket != std::string_view::npos) {
            if (type.back() != ']') error(inner_col, cat("unterminated quantization parameters in '", type, "'"));
            ref.quant_text = std::string(type.substr(bracket + 1, type.size() - bracket - 2));
            auto qp = split(ref.quant_text, ',');
            const int qcol = inner_col + static_cast<int>(bracket) + 1;
            if (type.substr(0, bracket) == "int4") {
                // Blockwise: "block,axis", both canonical integers so that the text round-trips.
                auto canonical = [](std::string_view v) {
                    return !v.empty() && v.size() <= 8 && v.find_first_not_of("0123456789") == std::string_view::npos &&
                           (v.size() == 1 || v[0] != '0');
                };
                int64_t block = 0, axis = 0;
                if (qp.size() != 2 || !canonical(qp[0]) || !canonical(qp[1]) || !parse_int64(qp[0], block) ||
                    !parse_int64(qp[1], axis))
                    error(qcol, cat("bad int4 block parameters '[", ref.quant_text, "]' (expected [block,axis])"));
                ref.quant.present = true;
                ref.quant.block = block;
                ref.quant.axis = static_cast<int>(axis);
            } else if (!ref.quant_text.empty() && ref.quant_text[0] == '@') {
                // Per-channel: "@scales.bin,axis"; the axis is written canonically so it round-trips.
                if (qp.size() != 2 || qp[0].size() < 2)
                    error(qcol, cat("bad per-channel quantization parameters '[", ref.quant_text,
                                    "]' (expected [@scales_file,axis])"));
                std::string_view ax = qp[1];
                bool digits = !ax.empty() && ax.size() <= 2 &&
                              ax.find_first_not_of("0123456789") == std::string_view::npos &&
                              (ax.size() == 1 || ax[0] != '0');
                int64_t axis = 0;
                if (!digits || !parse_int64(ax, axis))
                    error(qcol + static_cast<int>(qp[0].size()) + 1,
                          cat("bad quantization axis '", ax, "' (expected a non-negative integer)"));
                ref.scales_file = std::string(qp[0].substr(1));
                ref.quant.present = true;
                ref.quant.axis = static_cast<int>(axis);
            } else {
                double scale = 0;
                int64_t zp = 0;
                if (qp.size() != 2 || !parse_double(qp[0], scale) || !parse_int64(qp[1], zp))
                    error(inner_col, cat("bad quantization parameters '[", ref.quant_text,
                                         "]' (expected [scale,zero_point] or [@scales_file,axis])"));
                if (!(scale > 0) || !std::isfinite(scale))
                    error(inner_col, cat("quantization scale must be positive and finite, got ", qp[0]));
                ref.quant.present = true;
                ref.quant.scale = scale;
                ref.quant.zero_point = zp;
            }
            type = type.substr(0, bracket);
        }
        if (!parse_dtype(type, ref.dtype)) error(inner_col, cat("unknown dtype '", type, "'"));
        if (ref.quant.per_channel() && ref.dtype != DType::I8)
            error(inner_col, cat("per-channel quantization needs an int8 weight (symmetric), not ", type));
        if (ref.quant.present && ref.dtype != DType::U8 && ref.dtype != DType::I8 && !ref.quant.blockwise())
            error(inner_col, cat("quantization parameters on a ", type, " weight"));
        if (ref.quant.present && ref.dtype == DType::U8 && (ref.quant.zero_point < 0 || ref.quant.zero_point > 255))
            error(inner_col, cat("uint8 zero point ", ref.quant.zero_point, " is outside 0..255"));
        if (ref.quant.present && ref.dtype == DType::I8 &&
            (ref.quant.zero_point < -128 || ref.quant.zero_point > 127))
            error(inner_col, cat("int8 zero point ", ref.quant.zero_point, " is outside -128..127"));
        ref.shape = parse_dims(inner.substr(colon + 1), inner_col + static_cast<int>(colon) + 1);
        if (ref.quant.blockwise()) {
            int4::RowLayout layout;
            const std::string why = int4::layout_of(ref.shape, ref.quant.axis, ref.quant.block, layout);
            if (!why.empty()) error(inner_col, why);
        }
        if (ref.quant.per_channel() && static_cast<size_t>(ref.quant.axis) >= ref.shape.size())
            error(inner_col, cat("quantization axis ", ref.quant.axis, " is out of range for a weight of shape ",
                                 shape_str(ref.shape)));
        return ref;
    }

    std::vector<TensorRef> parse_list(std::string_view section, std::string_view prefix, int column,
                                      bool allow_empty) const {
        if (section.substr(0, prefix.size()) != prefix)
            error(column, cat("expected '", prefix, "' but found '", section.substr(0, 16), "'"));
        std::string_view body = section.substr(prefix.size());
        int col = column + static_cast<int>(prefix.size());
        std::vector<TensorRef> refs;
        if (body.empty()) return refs;
        // Split on ';' outside parentheses (quantization brackets use ',' so ';' never appears inside).
        size_t start = 0;
        int depth = 0;
        for (size_t i = 0; i <= body.size(); ++i) {
            if (i < body.size()) {
                char c = body[i];
                if (c == '(') ++depth;
                if (c == ')') --depth;
                if (c != ';' || depth != 0) continue;
            }
            refs.push_back(parse_ref(body.substr(start, i - start), col + static_cast<int>(start), allow_empty));
            start = i + 1;
        }
        return refs;
    }

private:
    const std::string &source_;
    int line_;
};

std::string write_ref(const TensorRef &ref) {
    if (!ref.present) return "";
    std::string out = ref.name + "(";
    if (ref.is_weight) {
        out += dtype_name(ref.dtype);
        if (ref.quant.present) out += "[" + ref.quant_text + "]";
        out += ":";
    }
    out += dims_text(ref.shape) + ")";
    return out;
}

} // namespace

ModelText parse_model_txt(const std::string &text, const std::string &source) {
    ModelText model;
    model.trailing_newline = !text.empty() && text.back() == '\n';
    bool first_line = true;
    size_t pos = 0;
    int line_no = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        bool has_newline = end != std::string::npos;
        if (!has_newline) end = text.size();
        std::string_view line(text.data() + pos, end - pos);
        pos = has_newline ? end + 1 : end;
        ++line_no;
        // A '\r' only ends a line before '\n'; a lone one at the end of the file is a control character.
        bool cr = has_newline && !line.empty() && line.back() == '\r';
        if (cr) line.remove_suffix(1);
        if (has_newline) {
            if (first_line) model.crlf = cr;
            else if (cr != model.crlf)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, source, ":", line_no, ":", line.size() + 1,
                     ": mixed line endings (CRLF and LF) in one file");
            first_line = false;
        }
        if (line.empty()) {
            model.blank_lines.push_back(line_no);
            continue;
        }
        LineParser p(source, line_no);
        for (size_t i = 0; i < line.size(); ++i) {
            unsigned char c = static_cast<unsigned char>(line[i]);
            if (c < 0x20 || c == 0x7F) p.error(static_cast<int>(i) + 1, "control character in line");
        }
        // Names reach hosts as C strings that Rust and Go read as UTF-8.
        const size_t bad = first_invalid_utf8(line);
        if (bad != std::string_view::npos)
            p.error(static_cast<int>(bad) + 1,
                    cat("invalid UTF-8 (byte 0x", hex_byte(static_cast<unsigned char>(line[bad])),
                        "); model.txt must be UTF-8"));
        auto sections = split(line, '*');
        if (sections.size() < 3 || sections.size() > 4)
            p.error(1, cat("expected 3 or 4 '*'-separated sections (NAME:TYPE*input:...*output:...[*attributes]), found ",
                           sections.size()));
        OpLine op;
        op.line = line_no;
        std::string_view head = sections[0];
        size_t colon = head.rfind(':');
        if (colon == std::string_view::npos) p.error(1, "expected NAME:TYPE at the start of the line");
        op.name = std::string(head.substr(0, colon));
        op.type = std::string(head.substr(colon + 1));
        if (op.name.empty()) p.error(1, "empty operation name");
        if (op.type.empty()) p.error(static_cast<int>(colon) + 2, "empty operation type");
        int col = static_cast<int>(sections[0].size()) + 2;
        op.inputs = p.parse_list(sections[1], "input:", col, true);
        col += static_cast<int>(sections[1].size()) + 1;
        op.outputs = p.parse_list(sections[2], "output:", col, false);
        if (op.outputs.empty()) p.error(col, "operation has no outputs");
        for (const auto &out : op.outputs)
            if (out.is_weight) p.error(out.column, cat("output '", out.name, "' is written like a weight"));
        col += static_cast<int>(sections[2].size()) + 1;
        if (sections.size() == 4) {
            op.has_attr_section = true;
            std::string_view attrs = sections[3];
            if (!attrs.empty()) {
                int acol = col;
                for (auto item : split(attrs, ';')) {
                    size_t c = item.find(':');
                    if (c == std::string_view::npos || c == 0)
                        p.error(acol, cat("expected KEY:VALUE attribute but found '", item, "'"));
                    std::string key(item.substr(0, c));
                    for (const auto &a : op.attrs)
                        if (a.key == key) p.error(acol, cat("duplicate attribute '", key, "'"));
                    op.attrs.push_back({std::move(key), std::string(item.substr(c + 1)), acol});
                    acol += static_cast<int>(item.size()) + 1;
                }
            }
        }
        model.ops.push_back(std::move(op));
    }
    return model;
}

std::string write_op_line(const OpLine &op) {
    std::string out = op.name + ":" + op.type + "*input:";
    for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (i) out += ";";
        out += write_ref(op.inputs[i]);
    }
    out += "*output:";
    for (size_t i = 0; i < op.outputs.size(); ++i) {
        if (i) out += ";";
        out += write_ref(op.outputs[i]);
    }
    if (op.has_attr_section) {
        out += "*";
        for (size_t i = 0; i < op.attrs.size(); ++i) {
            if (i) out += ";";
            out += op.attrs[i].key + ":" + op.attrs[i].value;
        }
    }
    return out;
}

std::string write_model_txt(const ModelText &model) {
    const char *eol = model.crlf ? "\r\n" : "\n";
    std::string out;
    size_t op_index = 0, blank_index = 0;
    int line_no = 1;
    size_t total_lines = model.ops.size() + model.blank_lines.size();
    for (size_t i = 0; i < total_lines; ++i, ++line_no) {
        if (blank_index < model.blank_lines.size() && model.blank_lines[blank_index] == line_no) {
            ++blank_index;
        } else if (op_index < model.ops.size()) {
            out += write_op_line(model.ops[op_index++]);
        }
        if (i + 1 < total_lines || model.trailing_newline) out += eol;
    }
    return out;
}

} // namespace onnxstream
