// gt-top's source (tools/gt-top): the dispatcher's GET /api/status, whose body is the JSON form
// of gt.v1.StatusReport (protobuf's JSON mapping), read back with protobuf's own parser.
#pragma once

#include <chrono>
#include <string>

#include "libgtcore/status.h"
#include "proto/status.pb.h"
#include "tools/gt-top/http_get.h"

namespace gt::top {

inline constexpr const char* kStatusPath = "/api/status";

// The body of a 200 answer. 401 is permission_denied with what to pass (--token, --token-file,
// GT_TOKEN); any other code is unavailable with the code and the server's first line.
Result<std::string> fetch_status_json(const Url& url, const std::string& token,
                                      std::chrono::milliseconds timeout);
// The same reading of an answer to GET kStatusPath (for async_http_get's callers).
Result<std::string> status_json_from(const Url& url, bool sent_token, Result<HttpReply> reply);

// JSON -> StatusReport. Fields this gt-top does not know (a newer dispatcher's) are ignored.
Result<v1::StatusReport> parse_status_json(const std::string& json);

}  // namespace gt::top
