// gt-top's orderings (tools/gt-top): one key, applied to the workers, sessions and users tables
// at once. Figures sort largest first; id and user sort ascending; ties go by id.
//
//   key     workers                    sessions                 users
//   ops     ops/s                      ops/s                    ops/s
//   mem     memory used                bytes held               bytes held
//   busy    busy share                 sync p99                 sync p99
//   queue   queue + in flight          instructions queued      instructions queued
//   errors  failed instructions        errors                   errors
//   id      id                         id                       name
//   user    device, then id            user, then id            name
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "proto/status.pb.h"

namespace gt::top {

enum class SortKey { kOps, kMem, kBusy, kQueue, kErrors, kId, kUser };

std::optional<SortKey> parse_sort_key(std::string_view name);
const char* sort_key_name(SortKey key);
// The next key in the order above (step +1) or the previous one (-1), wrapping.
SortKey next_sort_key(SortKey key, int step);
// "ops, mem, busy, queue, errors, id, user"
const char* sort_key_names();

// Indices into the report's repeated fields, in display order.
std::vector<int> sorted_workers(const v1::StatusReport& s, SortKey key);
std::vector<int> sorted_sessions(const v1::StatusReport& s, SortKey key);
std::vector<int> sorted_users(const v1::StatusReport& s, SortKey key);

}  // namespace gt::top
