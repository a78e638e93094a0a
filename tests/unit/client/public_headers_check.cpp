// Compiled with only the public include folders (libgtclient/include, libgtcore/include) on the
// include path, never the source tree: if a public header includes a private one
// ("libgtcore/...", "libgtclient/..."), the build fails here. This is what an installed SDK
// offers a user's program.
#include <gt/gt.h>

namespace {

// Uses the public vocabulary so the headers are not just parsed but instantiated.
[[maybe_unused]] gt::TensorMeta example_meta() {
  return gt::TensorMeta{gt::Shape{2, 3}, gt::kFloat32};
}
[[maybe_unused]] const char* example_names() {
  return gt::op_name(gt::OpId::k_relu) != nullptr ? gt::code_name(gt::Code::kOutOfRange) : "";
}

}  // namespace
