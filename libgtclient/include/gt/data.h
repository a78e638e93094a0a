// Data loading in torch.utils.data's form (gt.utils.data in Python):
//
//   gt::data::TensorDataset ds({x, y});                 // samples: the rows of x and y
//   gt::data::DataLoader loader(ds, gt::data::DataLoaderOptions(64).shuffle(true).seed(0));
//   for (const std::vector<gt::Tensor>& batch : loader) {  // batch[0]: rows of x, batch[1]: of y
//     ...
//   }
//
// A batch is one index_select per tensor, queued like any op (no round trip per sample). Each
// pass over the loader (each begin()) is an epoch: with shuffle, a new order drawn from the
// loader's generator (seeded: the same epochs every run; unseeded: std::random_device).
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <vector>

#include "gt/arg.h"
#include "gt/tensor.h"

namespace gt::data {

class TensorDataset {
 public:
  // All tensors have at least one dim and the same length along dim 0.
  explicit TensorDataset(std::vector<Tensor> tensors);
  int64_t size() const { return size_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  // The samples at `index` (1-d int64): one tensor per dataset tensor.
  std::vector<Tensor> get_batch(const Tensor& index) const;
  // Sample i, as its rows (each tensor's select(0, i)); negative counts from the end.
  std::vector<Tensor> get(int64_t i) const;

 private:
  std::vector<Tensor> tensors_;
  int64_t size_ = 0;
};

class DataLoaderOptions {
 public:
  DataLoaderOptions(int64_t batch_size = 1) : batch_size_(batch_size) {}  // NOLINT: as torch's
  GT_ARG(int64_t, batch_size, 1);
  GT_ARG(bool, shuffle, false);
  GT_ARG(bool, drop_last, false);     // drop a last batch shorter than batch_size
  GT_ARG(std::optional<uint64_t>, seed, std::nullopt);  // the shuffle's generator
};

class DataLoader {
 public:
  using Batch = std::vector<Tensor>;
  DataLoader(TensorDataset dataset, DataLoaderOptions options = {});

  // Batches per epoch.
  int64_t size() const;
  const TensorDataset& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;

    const Batch& operator*() const { return batch_; }
    const Batch* operator->() const { return &batch_; }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return next_ == o.next_; }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* loader, std::vector<int64_t> order, int64_t next);
    void load();
    const DataLoader* loader_ = nullptr;
    std::vector<int64_t> order_;  // this epoch's sample order
    int64_t next_ = 0;            // the batch loaded into batch_ (size(): the end)
    Batch batch_;
  };

  Iterator begin();  // starts an epoch
  Iterator end() const;

 private:
  TensorDataset dataset_;
  DataLoaderOptions options_;
  std::mt19937_64 generator_;
};

}  // namespace gt::data
