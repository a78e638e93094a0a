// The dispatcher's live status (issue 12): what operators see in /metrics, /api/status, the
// dashboard and gt-top. The snapshot itself is v1::StatusReport (proto/status.proto, declared
// once), taken on the dispatcher's thread from what it already keeps (Dispatcher::status()).
#pragma once

#include <string>

#include "proto/status.pb.h"

namespace gt::dispatcher {

// Prometheus text exposition format (version 0.0.4): gt_* metrics with worker / session / user
// labels; counters end in _total, sync latency is a histogram.
std::string format_prometheus(const v1::StatusReport& s);
// The same as one JSON object (protobuf's JSON mapping, the field names of status.proto): the
// /api/status body, read by gt-top and the dashboard.
std::string format_status_json(const v1::StatusReport& s);

}  // namespace gt::dispatcher
