// PyTorch-style printing (torch/_tensor_str.py with the default print options: precision 4,
// threshold 1000, edgeitems 3, linewidth 80). The dtype suffix follows GT's rule: shown for
// every dtype but float32 (PyTorch also omits it for int64 and bool).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "gt/tensor.h"

namespace gt {
namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

// Reads element i as double (floats, ints) from row-major bytes.
struct Reader {
  DType dtype;
  const char* p;
  double as_double(int64_t i) const {
    return GT_DISPATCH_DTYPE(dtype, S, [&]() -> double {
      return detail::convert_element<double>(detail::load_element<S>(p, static_cast<size_t>(i)));
    });
  }
  int64_t as_int(int64_t i) const {
    return GT_DISPATCH_DTYPE(dtype, S, [&]() -> int64_t {
      return detail::convert_element<int64_t>(detail::load_element<S>(p, static_cast<size_t>(i)));
    });
  }
};

std::string nonfinite(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

// Python's f"{v:.{prec}f}" and f"{v:.{prec}e}".
std::string fixed(double v, int prec) {
  if (!std::isfinite(v)) return nonfinite(v);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}
std::string sci(double v, int prec) {
  if (!std::isfinite(v)) return nonfinite(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", prec, v);
  return buf;
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// torch._tensor_str._Formatter: one common width (and mode) for every printed element.
class Formatter {
 public:
  Formatter(const Reader& r, bool floating, const std::vector<int64_t>& shown)
      : r_(r), floating_(floating) {
    if (!floating_) {
      for (int64_t i : shown) width_ = std::max(width_, format_raw(i).size());
      return;
    }
    std::vector<double> vals;
    for (int64_t i : shown) {
      double v = r_.as_double(i);
      if (std::isfinite(v) && v != 0) vals.push_back(v);
    }
    if (vals.empty()) return;
    double lo = std::abs(vals[0]), hi = lo;
    for (double v : vals) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (int_mode_) {
      if (hi / lo > 1000.0 || hi > 1.0e8) {
        sci_mode_ = true;
        for (double v : vals) width_ = std::max(width_, sci(v, kPrecision).size());
      } else {
        for (double v : vals) width_ = std::max(width_, fixed(v, 0).size() + 1);
      }
    } else {
      if (hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4) {
        sci_mode_ = true;
        for (double v : vals) width_ = std::max(width_, sci(v, kPrecision).size());
      } else {
        for (double v : vals) width_ = std::max(width_, fixed(v, kPrecision).size());
      }
    }
  }

  size_t width() const { return width_; }
  std::string format(int64_t i) const { return pad_left(format_raw(i), width_); }

 private:
  std::string format_raw(int64_t i) const {
    if (!floating_) {
      if (r_.dtype == DType::kBool) return r_.as_int(i) != 0 ? "True" : "False";
      return std::to_string(r_.as_int(i));
    }
    double v = r_.as_double(i);
    if (sci_mode_) return sci(v, kPrecision);
    if (int_mode_) return std::isfinite(v) ? fixed(v, 0) + "." : fixed(v, 0);
    return fixed(v, kPrecision);
  }

  Reader r_;
  bool floating_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t width_ = 1;
};

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

class Printer {
 public:
  Printer(const TensorMeta& meta, const Reader& r)
      : shape_(meta.shape), r_(r), strides_(contiguous_strides(meta.shape)),
        summarize_(meta.shape.numel() > kThreshold) {}

  // Positions shown along a dim of size n: all, or the first and last kEdgeItems.
  std::vector<int64_t> shown(int64_t n) const {
    std::vector<int64_t> idx;
    if (summarize_ && n > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
      for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }

  // Offsets of every printed element (PyTorch's get_summarized_data).
  void collect(int level, int64_t offset, std::vector<int64_t>* out) const {
    if (level == shape_.rank()) {
      out->push_back(offset);
      return;
    }
    for (int64_t i : shown(shape_[level])) collect(level + 1, offset + i * strides_[level], out);
  }

  std::string render(const Formatter& f, int level, int64_t offset, int indent) const {
    const int dim = shape_.rank() - level;
    if (dim == 0) return f.format(offset);
    const int64_t n = shape_[level];
    const bool elide = summarize_ && n > 2 * kEdgeItems;
    std::vector<std::string> parts;
    if (dim == 1) {
      const int element_length = static_cast<int>(f.width()) + 2;
      const int per_line = std::max(1, (kLineWidth - indent) / element_length);
      for (int64_t i = 0; i < n; ++i) {
        if (elide && i == kEdgeItems) {
          parts.push_back(" ...");
          i = n - kEdgeItems;
        }
        parts.push_back(f.format(offset + i * strides_[level]));
      }
      std::vector<std::string> lines;
      for (size_t i = 0; i < parts.size(); i += per_line) {
        std::vector<std::string> line(parts.begin() + i,
                                      parts.begin() + std::min(parts.size(), i + per_line));
        lines.push_back(join(line, ", "));
      }
      return "[" + join(lines, ",\n" + std::string(indent + 1, ' ')) + "]";
    }
    for (int64_t i = 0; i < n; ++i) {
      if (elide && i == kEdgeItems) {
        parts.push_back("...");
        i = n - kEdgeItems;
      }
      parts.push_back(render(f, level + 1, offset + i * strides_[level], indent + 1));
    }
    return "[" + join(parts, "," + std::string(dim - 1, '\n') + std::string(indent + 1, ' ')) +
           "]";
  }

 private:
  Shape shape_;
  Reader r_;
  std::array<int64_t, kMaxRank> strides_;
  bool summarize_;
};

// torch._tensor_str._add_suffixes.
std::string add_suffixes(const std::string& tensor_str, const std::vector<std::string>& suffixes,
                         int indent) {
  std::string out = tensor_str;
  const size_t nl = tensor_str.rfind('\n');
  // Python: len(s) - s.rfind("\n") + 1, where rfind gives -1 when there is no newline.
  int64_t last_line_len = static_cast<int64_t>(tensor_str.size()) -
                          (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    const int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line_len + len + 2 > kLineWidth) {
      out += ",\n" + std::string(indent, ' ') + suffix;
      last_line_len = indent + len;
    } else {
      out += ", " + suffix;
      last_line_len += len + 2;
    }
  }
  return out + ")";
}

}  // namespace

std::string format_tensor(const TensorMeta& meta, const std::string& bytes, const std::string& device) {
  if (static_cast<int64_t>(bytes.size()) != meta.nbytes())
    throw Error("format_tensor: " + std::to_string(bytes.size()) + " bytes for a " +
                dtype_name(meta.dtype) + " " + meta.shape.str() + " tensor of " +
                std::to_string(meta.nbytes()) + " bytes");
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  std::string body;
  if (meta.shape.numel() == 0) {
    if (meta.shape.rank() != 1) {
      std::string size = "size=(";
      for (int i = 0; i < meta.shape.rank(); ++i)
        size += (i ? ", " : "") + std::to_string(meta.shape[i]);
      suffixes.push_back(size + ")");
    }
    body = "[]";
  } else {
    Reader r{meta.dtype, bytes.data()};
    Printer printer(meta, r);
    std::vector<int64_t> shown;
    printer.collect(0, 0, &shown);
    Formatter f(r, is_floating(meta.dtype), shown);
    body = printer.render(f, 0, 0, indent);
  }
  if (!device.empty()) suffixes.push_back("device='" + device + "'");
  if (meta.dtype != DType::kFloat32)
    suffixes.push_back(std::string("dtype=gt.") + dtype_name(meta.dtype));
  return add_suffixes(prefix + body, suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  return os << format_tensor(t.meta(), detail::fetch_bytes(t), t.is_cuda() ? t.device().str() : "");
}

}  // namespace gt
