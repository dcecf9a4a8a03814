// Python views of the engine's traces, stage histories and captures, and the parser/printer.
// This file includes pybind11 and engine headers only (no <torch/extension.h>): it compiles fast.
// Contract: a Trace is exposed read-only (str() is print_trace, .python() the top level only);
// a printout that does not parse gives back its error as (line, column, message) so the Python
// layer can raise TraceParseError naming the file; captures load and save through the engine.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fstream>
#include <sstream>

#include "bindings.h"
#include "canonical/canonical.h"
#include "capture/capture.h"
#include "diff/diff.h"
#include "format/parser.h"
#include "format/printer.h"
#include "session/assess.h"
#include "session/run.h"

namespace py = pybind11;

namespace tv::py_bindings {
namespace {

std::string args_text(const BoundSymbol& b) {
  std::string out;
  for (const auto& a : b.args) out += (out.empty() ? "" : ", ") + python_text(a);
  for (const auto& [k, v] : b.kwargs) out += (out.empty() ? "" : ", ") + k + "=" + python_text(v);
  return out;
}

py::dict bound_symbol_dict(const BoundSymbol& b, const SourceRef& parent_source) {
  const SourceRef& source = b.source ? b.source : parent_source;
  py::dict d;
  d["name"] = b.name();
  py::list outs;
  for (const auto& o : b.outputs) outs.append(o->name);
  d["outputs"] = outs;
  d["args"] = args_text(b);
  d["header"] = b.header ? *b.header : std::string();
  d["statement"] = print_statement(b);
  py::list subs;
  for (const auto& s : b.subsymbols) subs.append(bound_symbol_dict(s, source));
  d["subsymbols"] = subs;
  d["tags"] = b.tags.vec();
  d["gradient_of"] = b.gradient_of.str();  // forward <-> backward (transforms/gradient_links.h)
  d["source"] = source ? *source : std::string();  // ir/source_location.h
  return d;
}

py::object provenance_of(const Trace& t) {
  if (!t.provenance) return py::none();
  py::dict d;
  d["pass"] = t.provenance->pass;
  d["milliseconds"] = t.provenance->milliseconds ? py::cast(*t.provenance->milliseconds) : py::none();
  return d;
}

PyStage stage_of(const Stage& s) { return PyStage{s.pass, s.trace, s.milliseconds, s.changed}; }

// The loader's range for a world size (engine/capture/decode.cpp): nothing saves what cannot load.
void check_world_size(const char* where, int world_size) {
  if (world_size < 1 || world_size > (1 << 20))
    throw py::value_error(std::string(where) + ": world_size must be from 1 to " + std::to_string(1 << 20) + ", got " +
                          std::to_string(world_size));
}

TraceKind kind_of(const std::string& name) {
  TraceKind k;
  if (!parse_trace_kind(name, &k)) throw py::value_error("unknown trace kind '" + name + "' (prologue, forward, backward, epilogue)");
  return k;
}

}  // namespace

py::dict stages_dict(const StageHistory& h) {
  py::dict d;
  for (auto kind : kTraceKinds) {
    py::list l;
    for (const auto& s : h.of(kind)) l.append(stage_of(s));
    d[py::str(std::string(trace_kind_name(kind)))] = l;
  }
  return d;
}

void bind_traces(py::module_& m) {
  py::class_<PyTrace>(m, "Trace", "A trace of the engine (immutable).")
      .def("__str__", [](const PyTrace& t) { return print_trace(*t.t); })
      .def("__repr__", [](const PyTrace& t) {
        return "<thunder_viz.Trace " + t.t->function_name + " (" + std::to_string(t.t->size()) + " bound symbols)" +
               (t.t->provenance ? ", " + t.t->provenance->pass : std::string()) + ">";
      })
      .def("python", [](const PyTrace& t) { return print_trace(*t.t, PrintOptions{0}); },
           "The top level only, as Thunder's trace.python().")
      .def("print", [](const PyTrace& t, int depth, bool headers) {
             PrintOptions o;
             o.depth = depth < 0 ? PrintOptions::kAllLevels : depth;
             o.headers = headers;
             return print_trace(*t.t, o);
           }, py::arg("depth") = -1, py::arg("headers") = true)
      .def_property_readonly("name", [](const PyTrace& t) { return t.t->function_name; })
      .def_property_readonly("bound_symbols", [](const PyTrace& t) {
        py::list l;
        for (const auto& b : t.t->body) l.append(bound_symbol_dict(b, nullptr));
        return l;
      }, "The top-level statements as dicts: name, outputs, args, header, statement, subsymbols (the same "
         "dicts), tags, gradient_of (the forward statement a gradient rule came from, '' for none) and "
         "source (the source line it came from, 'file:line: \\t<code>', '' for none; a backward statement's is "
         "its forward statement's, through gradient_of)")
      .def_property_readonly("provenance", [](const PyTrace& t) { return provenance_of(*t.t); })
      .def_property_readonly("args", [](const PyTrace& t) {
        std::vector<std::string> out;
        for (const auto& p : t.t->params) out.push_back(p.proxy->name);
        return out;
      })
      .def("canonical", [](const PyTrace& t) { return canonical_text(*t.t); }, "The printed canonical form.")
      .def("canonical_hash", [](const PyTrace& t) { return canonical_hash(*t.t); })
      .def("canonically_equal", [](const PyTrace& a, const PyTrace& b) { return canonically_equal(*a.t, *b.t); })
      .def("diff", [](const PyTrace& a, const PyTrace& b) {
             auto d = diff_traces(*a.t, *b.t, PrintOptions{0});
             return py::make_tuple(d.same_program, unified_text(d));
           }, "(same_program, unified statement diff) against another trace");

  py::class_<PyStage>(m, "Stage", "One stage of a stage history: the pass that made a trace.")
      .def_readonly("pass_name", &PyStage::pass)
      .def_property_readonly("trace", [](const PyStage& s) { return PyTrace{s.trace.shared()}; })
      .def_readonly("milliseconds", &PyStage::milliseconds)
      .def_readonly("changed", &PyStage::changed)
      .def("__repr__", [](const PyStage& s) { return "<Stage '" + s.pass + "'" + (s.changed ? "" : " unchanged") + ">"; });

  // parse_trace(text) -> (Trace, None) or (None, (line, column, message)).
  m.def("parse_trace", [](const std::string& text) -> py::tuple {
    auto r = parse_trace(text);
    if (r.trace) return py::make_tuple(PyTrace{r.trace}, py::none());
    const auto& e = *r.error;
    return py::make_tuple(py::none(), py::make_tuple(e.line, e.column, e.message));
  });

  py::class_<TensorCheck>(m, "TensorCheck", "One output or gradient checked against the eager reference.")
      .def_readonly("name", &TensorCheck::name)
      .def_readonly("max_abs", &TensorCheck::max_abs)
      .def_readonly("max_rel", &TensorCheck::max_rel)
      .def_readonly("tolerance", &TensorCheck::tolerance)
      .def_readonly("passed", &TensorCheck::pass)
      .def_readwrite("proxy", &TensorCheck::proxy,
                     "The final trace's value it is, 'forward:t6' or 'backward:t31'; '' when not known.")
      .def_property_readonly("shape", [](const TensorCheck& c) { return c.stats.shape; })
      .def_property_readonly("dtype", [](const TensorCheck& c) { return std::string(short_name(c.stats.dtype)); })
      .def("__repr__", [](const TensorCheck& c) {
        return "<TensorCheck " + c.name + (c.pass ? " pass" : " FAIL") + " max_rel=" + std::to_string(c.max_rel) + ">";
      });

  py::class_<PyCapture>(m, "Capture", "A capture (*.tvz.json): model, pipelines and their stage histories.")
      .def(py::init([](const std::string& model_name) {
             PyCapture c;
             c.c.tool_version = "0.1.0";
             c.c.model.name = model_name;
             return c;
           }), py::arg("model_name") = "python")
      .def_static("load", [](const std::string& path) { return PyCapture{load_capture(path)}; })
      .def_static("from_json", [](const std::string& text) { return PyCapture{capture_from_json(text)}; })
      .def("save", [](const PyCapture& c, const std::string& path) { save_capture(c.c, path); })
      .def("to_json", [](const PyCapture& c) { return capture_to_json(c.c); })
      .def_property_readonly("model_name", [](const PyCapture& c) { return c.c.model.name; })
      .def("set_model", [](PyCapture& c, const std::string& name, const std::map<std::string, std::string>& params,
                           const std::vector<std::tuple<std::string, std::vector<int64_t>, std::string>>& parameters) {
             c.c.model.name = name;
             c.c.model.params = params;
             std::vector<ParameterRecord> records;
             for (const auto& [n, shape, dtype] : parameters) {
               for (auto d : shape)
                 if (d < 0) throw py::value_error("set_model: parameter '" + n + "' has a negative dimension " + std::to_string(d));
               auto d = dtype_from_short(dtype);
               if (!d) throw py::value_error("set_model: parameter '" + n + "' has an unknown dtype '" + dtype + "' (f32, bf16, ...)");
               records.push_back(ParameterRecord{n, shape, *d});
             }
             c.c.model.parameters = std::move(records);
           })
      .def_property("tensors_file", [](const PyCapture& c) { return c.c.model.tensors; },
                    [](PyCapture& c, const std::string& name) {
                      if (name.find('/') != std::string::npos || name == "." || name == "..")
                        throw py::value_error("tensors_file: a file name beside the capture, without a folder, not '" +
                                              name + "'");
                      c.c.model.tensors = name;
                    },
                    "The file beside the capture holding the model's weights, inputs and eager numbers ('' none).")
      .def_property_readonly("num_pipelines", [](const PyCapture& c) { return c.c.pipelines.size(); })
      .def("pipeline_label", [](const PyCapture& c, size_t i) { return c.c.pipelines.at(i).spec.label(); })
      .def("pipeline_error", [](const PyCapture& c, size_t i) { return c.c.pipelines.at(i).error; })
      .def("pipeline_order", [](const PyCapture& c, size_t i) { return c.c.pipelines.at(i).spec.order; })
      .def("stages", [](const PyCapture& c, size_t i) { return stages_dict(c.c.pipelines.at(i).stages); })
      // The words of the session layer (session/assess.h), as the CLI and the GUI print them.
      .def("pipeline_outcome", [](const PyCapture& c, size_t i) {
        const auto& o = c.c.pipelines.at(i).outcome;
        return py::make_tuple(std::string(outcome_name(o.kind)), o.rule, o.reasons);
      }, "(outcome, rule, reasons) of pipeline i: outcome is 'passed', 'failed' or 'refused'")
      .def("pipeline_line", [](const PyCapture& c, size_t i) {
        if (i >= c.c.pipelines.size()) throw py::index_error("no pipeline " + std::to_string(i));
        return pipeline_line(c.c, static_cast<int>(i));
      })
      .def("verdicts", [](const PyCapture& c) {
        py::list l;
        for (const auto& cmp : c.c.comparisons)
          l.append(py::make_tuple(cmp.left, cmp.right, std::string(verdict_name(cmp.verdict)), cmp.why, cmp.traces_equal,
                                  cmp.numbers_equal));
        return l;
      }, "[(left, right, verdict, why, traces_equal, numbers_equal), ...]")
      .def("comparison_lines", [](const PyCapture& c) {
        std::vector<std::string> out;
        for (const auto& cmp : c.c.comparisons) out.push_back(comparison_line(c.c, cmp));
        return out;
      })
      // Appends a pipeline from traces per kind: {"prologue": [(pass, Trace, ms), ...], ...}.
      .def("add_pipeline", [](PyCapture& c, const std::vector<std::string>& order, const py::dict& stages, int world_size,
                              const std::string& device, const std::string& error) {
             check_world_size("add_pipeline", world_size);
             PipelineRecord p;
             p.spec.order = order;
             p.spec.world_size = world_size;
             p.spec.device = device;
             p.error = error;
             for (auto [key, value] : stages) {
               auto kind = kind_of(py::cast<std::string>(key));
               for (auto item : value) {
                 auto t = py::cast<py::tuple>(item);
                 p.stages.record(kind, py::cast<std::string>(t[0]), py::cast<PyTrace>(t[1]).t, py::cast<double>(t[2]));
               }
             }
             p.outcome = assess_pipeline(p);
             c.c.pipelines.push_back(std::move(p));
             return c.c.pipelines.size() - 1;
           }, py::arg("order"), py::arg("stages"), py::arg("world_size") = 1, py::arg("device") = "cpu",
           py::arg("error") = "")
      // Replay results of pipeline i: [(rank, [TensorCheck outputs], [TensorCheck gradients], error), ...].
      .def("set_replay", [](PyCapture& c, size_t i, const std::vector<std::tuple<int, std::vector<TensorCheck>,
                                                                             std::vector<TensorCheck>, std::string>>& ranks) {
             Replay r;
             for (const auto& [rank, outputs, gradients, error] : ranks) {
               RankResult rr;
               rr.rank = rank;
               rr.outputs = outputs;
               rr.gradients = gradients;
               rr.error = error;
               r.ranks.push_back(std::move(rr));
             }
             auto& rec = c.c.pipelines.at(i);
             rec.replay = std::move(r);
             rec.outcome = assess_pipeline(rec);
           })
      // Per-bound-symbol times of `rank` in pipeline i's replay (set_replay first):
      // [(trace, index, symbol, output, microseconds, device_timer, start_microseconds), ...].
      .def("set_timings", [](PyCapture& c, size_t i, int rank,
                             const std::vector<std::tuple<std::string, int, std::string, std::string, double, bool, double>>&
                                 timings) {
             auto& rec = c.c.pipelines.at(i);
             if (!rec.replay) throw py::value_error("pipeline " + std::to_string(i) + " has no replay: call set_replay first");
             for (auto& r : rec.replay->ranks)
               if (r.rank == rank) {
                 std::vector<SymbolTiming> checked;
                 for (const auto& [trace, index, symbol, output, us, device, start] : timings) {
                   if (index < 0)
                     throw py::value_error("set_timings: the index of a bound symbol is at least 0, got " + std::to_string(index));
                   checked.push_back({trace, index, symbol, output, us, device, start});
                 }
                 r.timings = std::move(checked);
                 return;
               }
             throw py::value_error("pipeline " + std::to_string(i) + "'s replay has no rank " + std::to_string(rank));
           })
      // None, or [(rank, [TensorCheck outputs], [TensorCheck gradients], error), ...].
      .def("replay", [](const PyCapture& c, size_t i) -> py::object {
        const auto& rec = c.c.pipelines.at(i);
        if (!rec.replay) return py::none();
        py::list l;
        for (const auto& r : rec.replay->ranks) l.append(py::make_tuple(r.rank, r.outputs, r.gradients, r.error));
        return l;
      })
      // Compares pipeline `right` with `left` as run_pipelines does (session/assess.h).
      .def("add_comparison", [](PyCapture& c, int left, int right) {
        int n = static_cast<int>(c.c.pipelines.size());
        if (left < 0 || right < 0 || left >= n || right >= n)
          throw py::index_error("add_comparison(" + std::to_string(left) + ", " + std::to_string(right) + "): the capture has " +
                                std::to_string(n) + " pipeline(s)");
        c.c.comparisons.push_back(compare_pipelines(c.c, left, right));
        return py::make_tuple(std::string(verdict_name(c.c.comparisons.back().verdict)), c.c.comparisons.back().why);
      }, py::arg("left"), py::arg("right"));

  m.def("conclude", [](const std::vector<std::string>& differs, const std::string& not_comparable_because) {
    auto [verdict, why] = conclude(differs, not_comparable_because);
    return py::make_tuple(std::string(verdict_name(verdict)), why);
  }, py::arg("differs"), py::arg("not_comparable_because") = "",
     "(verdict, why) from what a comparison found: the session layer's one rule (session/assess.h).");

  // The built-in models through run_pipelines (what `thunder-viz run` does).
  m.def("run_model", [](const std::string& model, const std::map<std::string, std::string>& params,
                        const std::vector<std::vector<std::string>>& orders, int world_size, bool replay) {
    check_world_size("run_model", world_size);
    RunRequest r;
    r.model = model;
    r.params = params;
    r.replay = replay;
    for (const auto& o : orders) {
      PipelineSpec s;
      s.order = o;
      s.world_size = world_size;
      r.pipelines.push_back(s);
    }
    py::gil_scoped_release release;
    return PyCapture{run_pipelines(r)};
  }, py::arg("model"), py::arg("params") = std::map<std::string, std::string>{},
     py::arg("orders") = std::vector<std::vector<std::string>>{{"jit"}}, py::arg("world_size") = 1,
     py::arg("replay") = true);
}

}  // namespace tv::py_bindings
