#include "workerd/sim/sim_backend.h"

#include <fmt/format.h>

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
}  // namespace

SimBackend::SimBackend(SimBackendOptions opts)
    : SimBackend(opts, make_device(opts)) {}

SimBackend::SimBackend(SimBackendOptions opts, std::unique_ptr<sim::SimDevice> device)
    : StreamBackend(std::move(device), opts.max_memory_bytes), opts_(std::move(opts)) {
  sim_ = static_cast<sim::SimDevice*>(&device_api());
  cpu::register_all(kernels_);
  set_kernels(kernels_);
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
  // Records that only refer to the blocks: a tensor freed while its kernel is queued gives its
  // block back to the stream-ordered allocator at once, as on CUDA (holding it until the kernel
  // ran would make memory use grow with the queue's depth).
  auto refer = [](const Tensor& t) {
    Tensor r = t;
    if (t.storage)
      r.storage = std::make_shared<Storage>(t.storage->data(), t.storage->bytes(),
                                            t.storage->capacity(), nullptr, t.storage->error_slot());
    return r;
  };
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

}  // namespace gt::worker
