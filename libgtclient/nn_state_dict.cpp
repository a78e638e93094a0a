// State-dict files: the "GTSD" v1 format documented in gt/nn.h.
#include <cstring>
#include <fstream>
#include <string>

#include "gt/nn.h"
#include "libgtcore/shape.h"

namespace gt::nn {
namespace {

constexpr char kMagic[4] = {'G', 'T', 'S', 'D'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxNameLen = 1 << 16;

template <typename T>
void put(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
}

class Reader {
 public:
  Reader(std::ifstream& in, const std::string& path) : in_(in), path_(path) {}

  template <typename T>
  T get(const char* what) {
    unsigned char b[sizeof(T)];
    read(reinterpret_cast<char*>(b), sizeof(T), what);
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
    return static_cast<T>(v);
  }
  void read(char* dst, size_t n, const char* what) {
    in_.read(dst, static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in_.gcount()) != n)
      throw Error("load_state_dict_file: " + path_ + ": truncated file (while reading " + what +
                  ")");
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error("load_state_dict_file: " + path_ + ": " + msg);
  }

 private:
  std::ifstream& in_;
  const std::string& path_;
};

}  // namespace

void save_state_dict(const StateDict& state, const std::string& path) {
  std::string head;
  head.append(kMagic, 4);
  put<uint32_t>(head, kVersion);
  put<uint64_t>(head, state.size());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("save_state_dict: cannot open " + path + " for writing");
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  for (const auto& [name, t] : state) {
    if (!t.defined()) throw Error("save_state_dict: \"" + name + "\" is undefined");
    std::string bytes = detail::fetch_bytes(t);  // a sync point per tensor
    std::string rec;
    put<uint32_t>(rec, static_cast<uint32_t>(name.size()));
    rec += name;
    put<uint8_t>(rec, static_cast<uint8_t>(t.dtype()));
    put<uint8_t>(rec, static_cast<uint8_t>(t.dim()));
    for (int64_t d : t.shape()) put<int64_t>(rec, d);
    put<uint64_t>(rec, bytes.size());
    out.write(rec.data(), static_cast<std::streamsize>(rec.size()));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  out.flush();
  if (!out) throw Error("save_state_dict: writing " + path + " failed");
}

StateDict load_state_dict_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("load_state_dict_file: cannot open " + path);
  Reader r(in, path);
  char magic[4];
  r.read(magic, 4, "the magic");
  if (std::memcmp(magic, kMagic, 4) != 0) r.fail("not a GT state-dict file (bad magic)");
  const uint32_t version = r.get<uint32_t>("the version");
  if (version != kVersion)
    r.fail("unsupported format version " + std::to_string(version) + " (this build reads " +
           std::to_string(kVersion) + ")");
  const uint64_t count = r.get<uint64_t>("the entry count");
  StateDict out;
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t len = r.get<uint32_t>("a name length");
    if (len == 0 || len > kMaxNameLen) r.fail("entry " + std::to_string(i) + ": bad name length");
    std::string name(len, '\0');
    r.read(name.data(), len, "a name");
    const int dt = r.get<uint8_t>("a dtype");
    if (!is_valid_dtype(dt)) r.fail("\"" + name + "\": invalid dtype " + std::to_string(dt));
    const int rank = r.get<uint8_t>("a rank");
    if (rank > kMaxRank) r.fail("\"" + name + "\": rank " + std::to_string(rank) + " too large");
    Shape s;
    for (int d = 0; d < rank; ++d) {
      const int64_t v = r.get<int64_t>("a dim");
      if (v < 0) r.fail("\"" + name + "\": negative dim");
      s.push_back(v);
    }
    TensorMeta meta{s, static_cast<DType>(dt)};
    Status st = check_shape_size(s, meta.dtype);
    if (!st.is_ok()) r.fail("\"" + name + "\": " + st.message());
    const uint64_t nbytes = r.get<uint64_t>("a byte count");
    if (nbytes != static_cast<uint64_t>(meta.nbytes()))
      r.fail("\"" + name + "\": " + std::to_string(nbytes) + " bytes for a " +
             dtype_name(meta.dtype) + " " + s.str() + " tensor of " +
             std::to_string(meta.nbytes()) + " bytes");
    std::string bytes(nbytes, '\0');
    r.read(bytes.data(), nbytes, "tensor data");
    out.emplace_back(std::move(name), detail::from_host_bytes(meta, bytes));
  }
  return out;
}

}  // namespace gt::nn
