#include "peer_test_util.h"

#include <cstdio>
#include <cstdlib>
#include <thread>
#include "require_ok.h"

namespace gt::test {

Tensor host_tensor(const Shape& s, DType dt) {
  Tensor t;
  t.meta = TensorMeta{s, dt};
  const size_t bytes = static_cast<size_t>(t.meta.nbytes());
  auto buf = std::make_shared<std::vector<char>>(std::max<size_t>(bytes, 1), 0);
  t.storage = std::shared_ptr<Storage>(new Storage(buf->data(), bytes, bytes, nullptr),
                                       [buf](Storage* st) { delete st; });
  return t;
}

Tensor poisoned(const std::string& op, const std::string& message, const std::string& origin) {
  Tensor t;
  t.poison = std::make_shared<const ErrorRecord>(ErrorRecord{op, message, origin});
  return t;
}

Cluster::Cluster(int n, TcpPeerLinkOptions opts, std::vector<uint32_t> want_ids) {
  for (int i = 0; i < n; ++i) {
    auto l = TcpPeerLink::create(opts);
    GT_REQUIRE_OK(l);
    links.push_back(std::move(*l));
    ids.push_back(want_ids.empty() ? 10 + static_cast<uint32_t>(i) : want_ids[static_cast<size_t>(i)]);
  }
  for (int i = 0; i < n; ++i) {
    links[static_cast<size_t>(i)]->set_self(ids[static_cast<size_t>(i)]);
    links[static_cast<size_t>(i)]->set_peers(table());
  }
}

std::map<uint32_t, std::string> Cluster::table() const {
  std::map<uint32_t, std::string> t;
  for (size_t i = 0; i < links.size(); ++i) t[ids[i]] = links[i]->address();
  return t;
}

CommGroup group_for(CommId c, const OpAttrs& a, uint32_t self) {
  auto g = decode_comm(c, a, self);
  if (!g.is_ok()) {  // no Catch macros here: this runs on the members' threads
    std::fprintf(stderr, "group_for: %s\n", g.status().to_string().c_str());
    std::abort();
  }
  return *g;
}

void run_parallel(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&fn, i] { fn(i); });
  for (auto& t : ts) t.join();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace gt::test
