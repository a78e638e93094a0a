#include "tests/unit/client/fake_session.h"

#include "gt/error.h"

namespace gt::test {

uint64_t FakeSession::emit(OpId op, const OpAttrs& attrs, std::span<const uint64_t> inputs) {
  Recorded r;
  r.op = op;
  r.attrs = attrs;
  r.data = std::string(attrs.data);  // the caller's buffer is only valid during emit()
  r.attrs.data = {};
  r.inputs.assign(inputs.begin(), inputs.end());
  r.result = is_in_place(op) ? 0 : next_id_++;
  instrs.push_back(std::move(r));
  return instrs.back().result;
}

detail::HostTensor FakeSession::fetch(uint64_t id) {
  auto it = fetch_bytes.find(id);
  if (it == fetch_bytes.end())
    throw Error("fake session: nothing to fetch for id " + std::to_string(id));
  detail::HostTensor h;
  h.bytes = it->second;
  return h;
}

void FakeSession::reset() {
  instrs.clear();
  frees.clear();
  fetch_bytes.clear();
  syncs = 0;
}

FakeSession& fake() {
  static FakeSession* s = new FakeSession();  // never destroyed: handles may outlive main
  return *s;
}

}  // namespace gt::test

namespace gt::detail {

Session& Session::get() { return test::fake(); }
void Session::connect(const std::string& address) { test::fake().connected_to = address; }
void Session::shutdown() { test::fake().alive = false; }
bool session_alive() { return test::fake().alive; }

}  // namespace gt::detail
