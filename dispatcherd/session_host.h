// What a ClientSession needs of the dispatcher around it (the Dispatcher implements it): the
// client's connection is the dispatcher's (replies go out within its backlog bounds), and
// stats that span sessions or connections are the dispatcher's to fill.
#pragma once

#include <string>
#include <string_view>

#include "proto/gt.pb.h"

namespace gt::dispatcher {

class ClientSession;

class SessionHost {
 public:
  virtual ~SessionHost() = default;
  // Sends `m` to s's client, within the bounds on unread replies (past them, clients that do
  // not read are dropped).
  virtual void send_reply(ClientSession& s, v1::ServerMessage& m) = 0;
  // The same for one fetch chunk: `head` (the Reply's other fields) and `meta` (the tensor's,
  // without data) become a small header, and `payload` goes after it uncopied into a message.
  virtual void send_fetch_chunk(ClientSession& s, const v1::Reply& head,
                                const v1::TensorData& meta, std::string_view payload) = 0;
  // STATS for a non-admin: every worker, counting only the tensors of s's user.
  virtual void fill_own_stats(const ClientSession& s, v1::Reply* r) const = 0;
  // STATS for an admin: the dispatcher's own counters.
  virtual void fill_dispatcher_stats(v1::DispatcherStats* d) const = 0;
  // STATUS: the live status, all of it for an admin, else s's user's sessions only.
  virtual void fill_status(const ClientSession& s, v1::StatusReport* r) const = 0;
  // An error was raised to s (kept among the recent errors of the status page).
  virtual void note_error(const ClientSession& s, const std::string& op,
                          const std::string& message) = 0;
};

}  // namespace gt::dispatcher
