// ModuleHolder: libtorch's module handles. Each module class XImpl (gt/nn.h) has a holder X,
// a shared pointer to it with value syntax, so C++ written for torch::nn reads the same:
//
//   gt::nn::Linear fc(784, 10);                  // std::make_shared<LinearImpl>(784, 10)
//   gt::Tensor y = fc(x);                        // fc->forward(x)
//   fc->weight;  opt(fc->parameters(), ...);     // the module's members
//   gt::nn::Sequential seq(gt::nn::Linear(4, 8), gt::nn::ReLU(), gt::nn::Linear(8, 2));
//
// Copies share the module (as torch's). A user module is a struct NetImpl : gt::nn::Module plus
// GT_MODULE(Net); register_module(name, holder) adopts a child and returns the holder.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "gt/error.h"

namespace gt::nn {

class Module;

template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  // A new module, built from the arguments (none: its default constructor).
  ModuleHolder()
    requires std::is_default_constructible_v<Impl>
      : impl_(std::make_shared<Impl>()) {}
  template <class... Args>
    requires(sizeof...(Args) > 0 && std::is_constructible_v<Impl, Args...> &&
             !(sizeof...(Args) == 1 &&
               (std::is_base_of_v<ModuleHolder, std::remove_cvref_t<Args>> && ...)))
  explicit ModuleHolder(Args&&... args) : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  // An empty holder, assigned later (torch's `Linear fc{nullptr};`).
  ModuleHolder(std::nullptr_t) {}  // NOLINT
  // Holds an existing module.
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

  Impl* operator->() const { return &get(); }
  Impl& operator*() const { return get(); }
  Impl* get_ptr() const { return impl_.get(); }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return !is_empty(); }
  // Where a module is taken as std::shared_ptr<Module> (Sequential::push_back, children).
  operator std::shared_ptr<Module>() const { return impl_; }  // NOLINT

  // Calls the module's forward.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get().forward(std::forward<Args>(args)...);
  }

 private:
  Impl& get() const {
    if (!impl_) throw Error("nn: this module holder is empty (constructed from nullptr)");
    return *impl_;
  }
  std::shared_ptr<Impl> impl_;
};

template <class T>
concept IsModuleHolder = requires(const T& h) {
  typename T::ContainedType;
  { h.ptr() } -> std::convertible_to<std::shared_ptr<typename T::ContainedType>>;
};

}  // namespace gt::nn

// Declares the holder `Name` of the module class `Name##Impl` (torch's TORCH_MODULE).
#define GT_MODULE(Name)                                          \
  class Name : public ::gt::nn::ModuleHolder<Name##Impl> {       \
   public:                                                       \
    using ::gt::nn::ModuleHolder<Name##Impl>::ModuleHolder;      \
  }
