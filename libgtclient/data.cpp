// gt::data: TensorDataset and DataLoader (include/gt/data.h).
#include "gt/data.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace gt::data {

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  if (tensors_.empty()) throw Error("TensorDataset: give at least one tensor");
  for (const Tensor& t : tensors_) {
    if (!t.defined() || t.dim() == 0)
      throw Error("TensorDataset: every tensor needs a dim 0 to index samples by");
    if (t.size(0) != tensors_[0].size(0))
      throw Error("TensorDataset: size mismatch between tensors along dim 0 (" +
                  std::to_string(tensors_[0].size(0)) + " vs " + std::to_string(t.size(0)) + ")");
  }
  size_ = tensors_[0].size(0);
}

std::vector<Tensor> TensorDataset::get_batch(const Tensor& index) const {
  std::vector<Tensor> out;
  out.reserve(tensors_.size());
  for (const Tensor& t : tensors_) out.push_back(t.index_select(0, index));
  return out;
}

std::vector<Tensor> TensorDataset::get(int64_t i) const {
  if (i < -size_ || i >= size_)
    throw Error("TensorDataset: sample " + std::to_string(i) + " is out of range for " +
                std::to_string(size_) + " samples");
  std::vector<Tensor> out;
  for (const Tensor& t : tensors_) out.push_back(t.select(0, i));
  return out;
}

DataLoader::DataLoader(TensorDataset dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  if (options_.batch_size() < 1)
    throw Error("DataLoader: batch_size must be positive, got " +
                std::to_string(options_.batch_size()));
  generator_.seed(options_.seed() ? *options_.seed() : std::random_device{}());
}

int64_t DataLoader::size() const {
  const int64_t n = dataset_.size(), b = options_.batch_size();
  return options_.drop_last() ? n / b : (n + b - 1) / b;
}

DataLoader::Iterator DataLoader::begin() {
  std::vector<int64_t> order(static_cast<size_t>(dataset_.size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle()) std::shuffle(order.begin(), order.end(), generator_);
  return Iterator(this, std::move(order), 0);
}

DataLoader::Iterator DataLoader::end() const { return Iterator(this, {}, size()); }

DataLoader::Iterator::Iterator(const DataLoader* loader, std::vector<int64_t> order, int64_t next)
    : loader_(loader), order_(std::move(order)), next_(next) {
  if (!order_.empty()) load();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++next_;
  load();
  return *this;
}

void DataLoader::Iterator::load() {
  batch_.clear();
  if (next_ >= loader_->size()) return;
  const int64_t b = loader_->options().batch_size();
  const auto first = order_.begin() + next_ * b;
  const auto last = order_.begin() + std::min<int64_t>((next_ + 1) * b,
                                                       static_cast<int64_t>(order_.size()));
  const std::vector<int64_t> rows(first, last);
  batch_ = loader_->dataset().get_batch(
      from_vector(rows, {static_cast<int64_t>(rows.size())}, kInt64));
}

}  // namespace gt::data
