#include "workerd/sim/sim_backend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <new>
#include <vector>

#include "workerd/cpu/kernels.h"

namespace gt::worker {

namespace {
// The StreamBackend owns the device; the SimBackend keeps a typed pointer to it for launch().
std::unique_ptr<sim::SimDevice> make_device(const SimBackendOptions& o) {
  return std::make_unique<sim::SimDevice>(o.device);
}

// A record of a tensor that only refers to its block: a tensor freed while its kernel is queued
// gives its block back to the stream-ordered allocator at once, as on CUDA (holding it until
// the kernel ran would make memory use grow with the queue's depth).
Tensor refer(const Tensor& t) {
  Tensor r = t;
  if (t.storage)
    r.storage = std::make_shared<Storage>(t.storage->data(), t.storage->bytes(),
                                          t.storage->capacity(), nullptr, t.storage->error_slot());
  return r;
}

// Where no compiler loads: the program is its own binary (generated and cached all the same).
class SourceCompiler final : public device::KernelCompiler {
 public:
  std::string id() const override { return "source"; }
  Result<std::string> compile(const device::FusedKernelSource& src) override { return src.source; }
};

// What the sim "loads": any non-null handle (a launch runs the CPU's chain).
char sim_kernel_handle;
}  // namespace

SimBackend::SimBackend(SimBackendOptions opts)
    : SimBackend(opts, make_device(opts)) {}

SimBackend::SimBackend(SimBackendOptions opts, std::unique_ptr<sim::SimDevice> device)
    : StreamBackend(std::move(device), opts.max_memory_bytes), opts_(std::move(opts)) {
  sim_ = static_cast<sim::SimDevice*>(&device_api());
  cpu::register_all(kernels_);
  set_kernels(kernels_);
  if (opts_.fused_kernels)
    enable_fused_kernels([this]() -> Result<std::unique_ptr<device::FusedKernelCache>> {
      std::unique_ptr<device::KernelCompiler> compiler;
      if (opts_.make_compiler) {
        auto made = opts_.make_compiler();
        if (made.is_ok()) compiler = std::move(*made);
        else spdlog::info("sim device: {}; fused programs are generated, not compiled",
                          made.status().message());
      }
      if (!compiler) compiler = std::make_unique<SourceCompiler>();
      return std::make_unique<device::FusedKernelCache>(
          opts_.kernel_cache, std::move(compiler),
          [](const std::string&, const std::string&) -> Result<void*> { return &sim_kernel_handle; });
    });
}

SimBackend::~SimBackend() { shutdown(); }

std::string SimBackend::device_name() const {
  return fmt::format("sim device (CPU kernels, {} MiB, launch {} us, {} GB/s)",
                     opts_.device.memory_bytes >> 20, opts_.device.launch_us, opts_.device.gbps);
}

Status SimBackend::run_kernel(const KernelArgs& args) {
  GT_ASSIGN_OR_RETURN(device::Stream s, stream_for(args.session));
  // Blocks another stream used last are ordered after that work (the allocator).
  for (const Tensor* t : args.inputs)
    if (t->storage) GT_RETURN_IF_ERROR(use_on(t->storage->data(), s));
  if (args.out.storage) GT_RETURN_IF_ERROR(use_on(args.out.storage->data(), s));
  // The kernel runs later, on the stream's device thread: it gets copies of everything it reads
  // (the tensors' records share the storages, which stay alive until it has run).
  struct Launch {
    OpId op;
    OpAttrs attrs;
    std::vector<Tensor> inputs;
    Tensor out;
    uint64_t session;
    CpuKernel kernel;
  };
  auto l = std::make_shared<Launch>();
  l->op = args.op;
  l->attrs = args.attrs;
  l->attrs.data = {};  // host bytes belong to the instruction (uploads never get here)
  l->inputs.reserve(args.inputs.size());
  for (const Tensor* t : args.inputs) l->inputs.push_back(refer(*t));
  l->out = refer(args.out);
  l->session = args.session;
  l->kernel = kernels_[static_cast<size_t>(args.op)];
  return sim_->launch(s, [this, l] {
    // A kernel reading a result that failed on the device passes the poison on (no report:
    // dependents inherit it, as the executor's poisoned tensors do).
    for (const Tensor& t : l->inputs)
      if (const DeviceErrorSlot::Error* e = t.storage ? t.storage->device_error() : nullptr) {
        if (l->out.storage && l->out.storage->error_slot()) l->out.storage->error_slot()->set(*e);
        return;
      }
    std::vector<const Tensor*> ins;
    ins.reserve(l->inputs.size());
    for (const Tensor& t : l->inputs) ins.push_back(&t);
    Status st;
    try {
      st = l->kernel(KernelArgs{l->op, l->attrs, ins, l->out, l->session});
    } catch (const std::bad_alloc&) {
      st = resource_exhausted("out of memory for temporaries");
    } catch (const std::exception& e) {
      st = internal_error("{}", e.what());
    }
    if (!st.is_ok())
      report_kernel_failure(l->session, l->out.handle, l->op,
                            l->out.storage ? l->out.storage->error_slot() : nullptr, st);
    if (opts_.fault_after_kernels != 0 && ++kernels_run_ >= opts_.fault_after_kernels)
      sim_->inject_sticky_error(fmt::format("injected fault after {} kernels", kernels_run_.load()));
  });
}

Status SimBackend::run_fused_kernel(const FusedArgs& args) {
  GT_ASSIGN_OR_RETURN(void* kernel, fused_kernel(device::signature_of(args)));
  (void)kernel;  // (the CPU's chain runs in its place)
  GT_ASSIGN_OR_RETURN(device::Stream s, stream_for(args.session));
  std::vector<const Tensor*> touched{&args.head, &args.out};
  for (const FusedStep& st : args.steps)
    if (st.operand) touched.push_back(st.operand);
  for (const Tensor* t : touched)
    if (t->storage) GT_RETURN_IF_ERROR(use_on(t->storage->data(), s));
  // As run_kernel: the launch keeps records of what it reads, the steps pointing into them.
  struct Launch {
    Tensor head, out;
    std::vector<Tensor> operands;
    std::vector<FusedStep> steps;
    uint64_t session;
  };
  auto l = std::make_shared<Launch>();
  l->head = refer(args.head);
  l->out = refer(args.out);
  l->session = args.session;
  l->operands.reserve(args.steps.size());
  l->steps.assign(args.steps.begin(), args.steps.end());
  for (FusedStep& st : l->steps)
    if (st.operand) {
      l->operands.push_back(refer(*st.operand));
      st.operand = &l->operands.back();
    }
  return sim_->launch(s, [this, l] {
    auto poisoned = [](const Tensor& t) { return t.storage ? t.storage->device_error() : nullptr; };
    const DeviceErrorSlot::Error* e = poisoned(l->head);
    for (const Tensor& t : l->operands)
      if (!e) e = poisoned(t);
    if (e) {  // passed on, as run_kernel's kernels do
      if (l->out.storage && l->out.storage->error_slot()) l->out.storage->error_slot()->set(*e);
      return;
    }
    Status st;
    try {
      st = cpu::run_fused_chain(FusedArgs{l->head, l->steps, l->out, l->session});
    } catch (const std::bad_alloc&) {
      st = resource_exhausted("out of memory for temporaries");
    }
    if (!st.is_ok())
      report_kernel_failure(l->session, l->out.handle,
                            l->steps.empty() ? OpId::k_cast : l->steps.back().op,  // (casts alone)
                            l->out.storage ? l->out.storage->error_slot() : nullptr, st);
  });
}

}  // namespace gt::worker
