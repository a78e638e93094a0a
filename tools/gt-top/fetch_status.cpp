#include "tools/gt-top/fetch_status.h"

#include <google/protobuf/util/json_util.h>

namespace gt::top {
namespace {
std::string first_line(const std::string& body) {
  std::string line = body.substr(0, body.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}
}  // namespace

Result<std::string> fetch_status_json(const Url& url, const std::string& token,
                                      std::chrono::milliseconds timeout) {
  return status_json_from(url, !token.empty(), http_get(url, kStatusPath, token, timeout));
}

Result<std::string> status_json_from(const Url& url, bool sent_token, Result<HttpReply> r) {
  if (!r.is_ok()) return r.status();
  if (r->code == 200) return std::move(r->body);
  if (r->code == 401)
    return permission_denied(
        "{}: 401 Unauthorized ({}): {}", url.text, first_line(r->body),
        !sent_token ? "this dispatcher has a users_file; pass an admin's token with --token, "
                        "--token-file or GT_TOKEN (a user's token shows that user's sessions)"
                      : "the token was refused");
  if (r->code == 404)
    return unavailable("{}: 404 Not Found for /api/status: is this a GT dispatcher's http_port "
                       "(not its client port)?", url.text);
  return unavailable("{}: HTTP {}: {}", url.text, r->code, first_line(r->body));
}

Result<v1::StatusReport> parse_status_json(const std::string& json) {
  v1::StatusReport s;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto st = google::protobuf::util::JsonStringToMessage(json, &s, options);
  if (!st.ok())
    return data_loss("the status is not a StatusReport: {}", std::string(st.message()));
  return s;
}

}  // namespace gt::top
