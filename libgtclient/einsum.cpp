// bmm, repeat and einsum: composites of permute / reshape / expand / sum / matmul, so they get
// gradients, every backend and the sharding rules of what they are made of.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "gt/functional.h"

namespace gt {
namespace {

struct Operand {
  std::string letters;
  Tensor t;
};

[[noreturn]] void bad(const std::string& eq, const std::string& why) {
  throw Error("einsum(\"" + eq + "\"): " + why);
}

// Sums away the letters of `op` that are in neither `keep1` nor `keep2`.
Operand sum_unused(Operand op, const std::string& keep1, const std::string& keep2) {
  for (int64_t d = static_cast<int64_t>(op.letters.size()) - 1; d >= 0; --d) {
    const char c = op.letters[static_cast<size_t>(d)];
    if (keep1.find(c) == std::string::npos && keep2.find(c) == std::string::npos) {
      op.t = op.t.sum(d);
      op.letters.erase(static_cast<size_t>(d), 1);
    }
  }
  return op;
}

// The permutation putting `from`'s letters in the order of `to` (same letters).
std::vector<int64_t> order(const std::string& from, const std::string& to) {
  std::vector<int64_t> perm;
  for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
  return perm;
}

int64_t product(const std::string& letters, const std::map<char, int64_t>& size) {
  int64_t n = 1;
  for (char c : letters) n *= size.at(c);
  return n;
}

}  // namespace

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (a.dim() != 3 || b.dim() != 3)
    throw Error("bmm: both operands must be 3-d tensors, got " + a.shape().str() + " and " +
                b.shape().str());
  if (a.size(0) != b.size(0))
    throw Error("bmm: batch sizes differ: " + a.shape().str() + " and " + b.shape().str());
  return a.matmul(b);
}

Tensor repeat(const Tensor& x, Dims sizes) {
  const std::vector<int64_t> reps(sizes.begin(), sizes.end());
  const size_t n = reps.size();
  if (n < static_cast<size_t>(x.dim()))
    throw Error("repeat: the number of repeat dims (" + std::to_string(n) +
                ") can not be smaller than the number of tensor dims (" +
                std::to_string(x.dim()) + ")");
  std::vector<int64_t> padded(n - static_cast<size_t>(x.dim()), 1), inter, tiled, out;
  for (int64_t d = 0; d < x.dim(); ++d) padded.push_back(x.size(d));
  for (size_t i = 0; i < n; ++i) {
    if (reps[i] < 0) throw Error("repeat: repeats can not be negative, got " + std::to_string(reps[i]));
    inter.insert(inter.end(), {1, padded[i]});
    tiled.insert(tiled.end(), {reps[i], padded[i]});
    out.push_back(reps[i] * padded[i]);
  }
  // [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...]: the copies tile whole blocks.
  return x.reshape(inter).expand(tiled).reshape(out);
}

namespace {

// One two-operand contraction: letters of a and b in neither `keep` nor the other operand are
// summed first; shared letters in `keep` are batch dims, shared ones not kept are contracted:
// [batch, a_only, contracted] @ [batch, contracted, b_only] as one batched matmul.
Operand contract(Operand a, Operand b, const std::string& keep,
                 const std::map<char, int64_t>& size) {
  a = sum_unused(std::move(a), keep, b.letters);
  b = sum_unused(std::move(b), keep, a.letters);
  std::string batch, contracted, a_only, b_only;
  for (char c : a.letters) {
    const bool in_b = b.letters.find(c) != std::string::npos;
    const bool kept = keep.find(c) != std::string::npos;
    (in_b ? (kept ? batch : contracted) : a_only) += c;
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos) b_only += c;
  const int64_t nb = product(batch, size), m = product(a_only, size),
                k = product(contracted, size), n = product(b_only, size);
  const Tensor lhs = a.t.permute(order(a.letters, batch + a_only + contracted)).reshape({nb, m, k});
  const Tensor rhs = b.t.permute(order(b.letters, batch + contracted + b_only)).reshape({nb, k, n});
  const std::string result = batch + a_only + b_only;
  std::vector<int64_t> shape;
  for (char c : result) shape.push_back(size.at(c));
  return {result, lhs.matmul(rhs).reshape(shape)};
}

// The diagonal of the dims of `op` named by the same letter (torch.einsum's "ii->i"): the
// repeats move last, merge, and index_select picks the positions i * (n^(r-1) + ... + 1).
Operand take_diagonals(Operand op) {
  for (size_t d = 0; d < op.letters.size(); ++d) {
    const char c = op.letters[d];
    std::vector<int64_t> same, rest;
    for (size_t e = 0; e < op.letters.size(); ++e)
      (op.letters[e] == c ? same : rest).push_back(static_cast<int64_t>(e));
    if (same.size() < 2) continue;
    const int64_t n = op.t.size(same[0]);
    for (int64_t s : same)
      if (op.t.size(s) != n) throw Error(std::string("einsum: the repeated subscript '") + c +
                                         "' names dims of different sizes");
    std::string letters;
    std::vector<int64_t> perm = rest, flat;
    for (int64_t e : rest) {
      letters += op.letters[static_cast<size_t>(e)];
      flat.push_back(op.t.size(e));
    }
    perm.insert(perm.end(), same.begin(), same.end());
    int64_t step = 0, block = 1;
    for (size_t i = 0; i < same.size(); ++i, block *= n) step += block;
    flat.push_back(block);
    const Tensor idx = arange(n, kInt64) * step;
    op.t = op.t.permute(perm).reshape(flat).index_select(static_cast<int64_t>(rest.size()), idx);
    op.letters = letters + c;
    d = static_cast<size_t>(-1);  // letters changed: scan again from the start
  }
  return op;
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    bad(equation, "the equation has " + std::to_string(terms.size()) + " operand(s), " +
                      std::to_string(operands.size()) + " given");
  for (char c : eq)
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != ',' && c != '.' && c != '-' && c != '>')
      bad(equation, "subscripts are letters");
  // "...": the broadcast dims get letters the equation does not use, right-aligned across the
  // operands (so "...ij" of a [5, 2, 3] and "...jk" of a [3, 4] share the trailing letters).
  std::string spare;
  for (char c = 'A'; c <= 'z'; ++c)
    if (std::isalpha(static_cast<unsigned char>(c)) && eq.find(c) == std::string::npos) spare += c;
  size_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t at = terms[i].find("...");
    if (at == std::string::npos) continue;
    if (terms[i].find("...", at + 3) != std::string::npos) bad(equation, "'...' appears twice in one operand");
    const int64_t named = static_cast<int64_t>(terms[i].size()) - 3;
    if (operands[i].dim() < named)
      bad(equation, "operand " + std::to_string(i) + " has fewer dims than its subscripts");
    ellipsis_rank = std::max(ellipsis_rank, static_cast<size_t>(operands[i].dim() - named));
  }
  if (ellipsis_rank > spare.size()) bad(equation, "too many dims under '...'");
  const std::string broadcast = spare.substr(0, ellipsis_rank);
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t at = terms[i].find("...");
    if (at == std::string::npos) continue;
    const size_t k = static_cast<size_t>(operands[i].dim()) - (terms[i].size() - 3);
    terms[i].replace(at, 3, broadcast.substr(ellipsis_rank - k));
  }
  std::map<char, int64_t> size, count;
  std::vector<Operand> ops;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    if (t.find('.') != std::string::npos) bad(equation, "'.' outside '...'");
    if (static_cast<int64_t>(t.size()) != operands[i].dim())
      bad(equation, "operand " + std::to_string(i) + " has " + std::to_string(operands[i].dim()) +
                        " dims, its subscripts '" + terms[i] + "' name " + std::to_string(t.size()));
    Operand op = take_diagonals({t, operands[i]});
    for (size_t d = 0; d < op.letters.size(); ++d) {
      const char c = op.letters[d];
      const int64_t s = op.t.size(static_cast<int64_t>(d));
      if (size.count(c) && size[c] != s && size[c] != 1 && s != 1)
        bad(equation, std::string("letter '") + c + "' has sizes " + std::to_string(size[c]) +
                          " and " + std::to_string(s));
      size[c] = size.count(c) ? std::max(size[c], s) : s;
    }
    for (char c : t) ++count[c];
    ops.push_back(std::move(op));
  }
  // Size-1 dims broadcast against the letter's size elsewhere (torch's rule).
  for (Operand& op : ops) {
    std::vector<int64_t> want;
    bool grow = false;
    for (size_t d = 0; d < op.letters.size(); ++d) {
      want.push_back(size[op.letters[d]]);
      grow = grow || want.back() != op.t.size(static_cast<int64_t>(d));
    }
    if (grow) op.t = op.t.expand(want);
  }
  std::string output;
  if (arrow == std::string::npos) {
    output = broadcast;  // torch: the broadcast dims first, then the letters seen once, sorted
    for (auto [c, k] : count)
      if (k == 1 && broadcast.find(c) == std::string::npos) output += c;  // std::map: sorted
  } else {
    output = eq.substr(arrow + 2);
    const size_t at = output.find("...");
    if (at != std::string::npos) output.replace(at, 3, broadcast);
    for (size_t d = 0; d < output.size(); ++d)
      if (!size.count(output[d]) || output.find(output[d]) != d)
        bad(equation, "output letters must appear in the operands, once each");
  }

  Operand acc = sum_unused(ops[0], output, [&] {
    std::string later;
    for (size_t i = 1; i < ops.size(); ++i) later += ops[i].letters;
    return later;
  }());
  for (size_t i = 1; i < ops.size(); ++i) {
    std::string keep = output;  // what the result or a later operand still needs
    for (size_t j = i + 1; j < ops.size(); ++j) keep += ops[j].letters;
    acc = contract(std::move(acc), ops[i], keep, size);
  }
  acc = sum_unused(std::move(acc), output, "");
  return acc.t.permute(order(acc.letters, output));
}

}  // namespace gt
