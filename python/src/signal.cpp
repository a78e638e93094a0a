// Signals and signal configs (ARCHITECTURE §5) for gt.signal / gt.config: thin bindings over
// libgtclient's gt::signal::enter/exit and gt::register_config (which send the scopes and configs
// to the dispatcher, in order with the ops around them) and gt::parse_config (the YAML schema
// parser the dispatcher uses for its server-wide configs, so both validate alike and errors
// name the file and key).
//
// Referencing gt::signal here also links libgtclient's signal.cpp into the extension, whose
// static initializer installs the autograd hooks that run gradient ops under the backward
// signal of the scope their forward op was recorded in.
#include <gt/signal.h>

#include "common.h"

namespace gtpy {
namespace {

// One config as a plain dict (gt.config turns it into a gt.SignalConfig):
// {"shard": None | {"axis", "workers" (None: all), "replicated"}, "backward": str | None,
//  "compile": bool or None (unset)}.
py::dict spec_dict(const gt::SignalConfig& c) {
  py::dict d;
  if (c.shard) {
    py::dict s;
    s["axis"] = c.shard->axis;
    if (c.shard->workers.empty())
      s["workers"] = py::none();
    else
      s["workers"] = py::cast(c.shard->workers);
    s["replicated"] = c.shard->replicated;
    d["shard"] = std::move(s);
  } else {
    d["shard"] = py::none();
  }
  d["backward"] = c.backward_signal.empty() ? py::object(py::none())
                                            : py::object(py::str(c.backward_signal));
  d["compile"] = c.compile ? py::object(py::bool_(*c.compile)) : py::object(py::none());
  return d;
}

}  // namespace

void init_signal(py::module_& m) {
  m.def(
      "_parse_signal_configs",
      [](const std::string& text, const std::string& source) {
        std::map<std::string, gt::SignalConfig> parsed;
        try {
          parsed = gt::parse_config(text, source);
        } catch (const gt::Error& e) {
          throw py::value_error(e.what());
        }
        py::dict out;
        for (const auto& [name, c] : parsed) out[py::str(name)] = spec_dict(c);
        return out;
      },
      "text"_a, "source"_a,
      "Parses YAML signal configs with the dispatcher's own schema parser: {name: dict}. "
      "Raises ValueError naming `source` and the offending key.");

  m.def(
      "_register_config",
      [](const std::string& name, py::object shard, const std::string& backward,
         py::object compile) {
        gt::SignalConfig c;
        if (!shard.is_none()) {
          auto t = shard.cast<py::tuple>();
          gt::ShardConfig s;
          s.axis = t[0].cast<int>();
          if (!t[1].is_none()) s.workers = t[1].cast<std::vector<uint32_t>>();
          s.replicated = t[2].cast<bool>();
          c.shard = s;
        }
        c.backward_signal = backward;
        if (!compile.is_none()) c.compile = compile.cast<bool>();
        gt::register_config(name, c);
      },
      "name"_a, "shard"_a, "backward"_a, "compile"_a,
      "gt::register_config: sends one config (shard = None or (axis, workers|None, "
      "replicated)) to the dispatcher for this session (starts the session).");

  m.def(
      "_registered_configs",
      [] {
        py::dict out;
        for (const auto& [name, c] : gt::get_config()) out[py::str(name)] = spec_dict(c);
        return out;
      },
      "gt::get_config(): the configs sent to the dispatcher by this process, as dicts.");

  m.def(
      "_signal_enter",
      [](const std::string& name, const std::string& backward) {
        gt::signal::enter(name, backward);
      },
      "name"_a, "backward"_a = "",
      "gt::signal::enter: opens a scope in the session's instruction stream (starts the session).");
  m.def("_signal_exit", [] { gt::signal::exit(); }, "gt::signal::exit: leaves the innermost scope.");
  m.def("_signal_stack", [] { return gt::signal::stack(); },
        "gt::signal::stack(): the open scopes' names, outermost first (process-wide).");
}

}  // namespace gtpy
