// gt::status() (gt/status.h): the dispatcher's StatusReport (a STATUS request), in the public struct.
#include <google/protobuf/util/json_util.h>

#include "gt/error.h"
#include "gt/status.h"
#include "libgtclient/session.h"
#include "proto/status.pb.h"

namespace gt {

ServiceStatus status() {
  v1::StatusReport r;
  if (!r.ParseFromString(detail::Session::get().status_report()))
    throw Error("malformed status report from the dispatcher");
  ServiceStatus s;
  s.version = r.version();
  s.uptime_s = r.uptime_s();
  for (const auto& w : r.workers()) {
    s.workers.push_back({w.id(), w.device_kind(), w.device_name(), w.memory_capacity_bytes(),
                         w.memory_used_bytes(), w.memory_reserved_bytes(), w.tensors(),
                         w.tensor_bytes(), w.ops_executed(), w.queue_depth(),
                         w.instructions_in_flight(), w.peer_bytes_sent(), w.peer_bytes_received(),
                         w.errors(), w.ops_per_s(), w.busy_fraction()});
  }
  for (const auto& x : r.sessions()) {
    s.sessions.push_back({x.id(), x.user(), x.program(), x.tensors(), x.tensor_bytes(),
                          x.instructions(), x.instructions_queued(), x.errors(), x.ops_per_s(),
                          x.age_s(), x.sync_latency().count(), x.sync_latency().p50_s(),
                          x.sync_latency().p99_s()});
  }
  for (const auto& u : r.users()) {
    s.users.push_back({u.name(), u.sessions(), u.tensors(), u.tensor_bytes(), u.instructions(),
                       u.errors(), u.ops_per_s()});
  }
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(r, &s.json, o);
  return s;
}

}  // namespace gt
