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
  if (eq.find("...") != std::string::npos) bad(equation, "'...' is not supported");
  if (terms.size() != operands.size())
    bad(equation, "the equation has " + std::to_string(terms.size()) + " operand(s), " +
                      std::to_string(operands.size()) + " given");
  if (terms.size() > 2) bad(equation, "more than two operands are not supported");
  std::map<char, int64_t> size, count;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    if (static_cast<int64_t>(t.size()) != operands[i].dim())
      bad(equation, "operand " + std::to_string(i) + " has " + std::to_string(operands[i].dim()) +
                        " dims, its subscripts '" + t + "' name " + std::to_string(t.size()));
    for (size_t d = 0; d < t.size(); ++d) {
      const char c = t[d];
      if (!std::isalpha(static_cast<unsigned char>(c))) bad(equation, "subscripts are letters");
      if (t.find(c) != d) bad(equation, "a letter repeated in one operand is not supported");
      const int64_t s = operands[i].size(static_cast<int64_t>(d));
      if (size.count(c) && size[c] != s)
        bad(equation, std::string("letter '") + c + "' has sizes " + std::to_string(size[c]) +
                          " and " + std::to_string(s));
      size[c] = s;
      ++count[c];
    }
  }
  std::string output;
  if (arrow == std::string::npos) {
    for (auto [c, k] : count)
      if (k == 1) output += c;  // std::map: sorted
  } else {
    output = eq.substr(arrow + 2);
    for (size_t d = 0; d < output.size(); ++d)
      if (!size.count(output[d]) || output.find(output[d]) != d)
        bad(equation, "output letters must appear in the operands, once each");
  }

  if (terms.size() == 1) {
    Operand a = sum_unused({terms[0], operands[0]}, output, "");
    return a.t.permute(order(a.letters, output));
  }
  Operand a = sum_unused({terms[0], operands[0]}, output, terms[1]);
  Operand b = sum_unused({terms[1], operands[1]}, output, a.letters);
  std::string batch, contracted, a_only, b_only;
  for (char c : a.letters) {
    const bool in_b = b.letters.find(c) != std::string::npos;
    const bool in_out = output.find(c) != std::string::npos;
    (in_b ? (in_out ? batch : contracted) : a_only) += c;
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos) b_only += c;
  // [batch, a_only, contracted] @ [batch, contracted, b_only] as one batched matmul.
  const int64_t nb = product(batch, size), m = product(a_only, size),
                k = product(contracted, size), n = product(b_only, size);
  const Tensor lhs_t = a.t.permute(order(a.letters, batch + a_only + contracted)).reshape({nb, m, k});
  const Tensor rhs_t = b.t.permute(order(b.letters, batch + contracted + b_only)).reshape({nb, k, n});
  std::vector<int64_t> shape;
  const std::string result = batch + a_only + b_only;
  for (char c : result) shape.push_back(size[c]);
  return lhs_t.matmul(rhs_t).reshape(shape).permute(order(result, output));
}

}  // namespace gt
