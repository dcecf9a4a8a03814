// The HTML report: one self-contained page (inline CSS, a few lines of inline JS, nothing fetched).
// Every text that comes from a trace or the capture goes through escape_markup. Colours always
// come with a text label (badges, PASS/FAIL, diff marks), so nothing is told by colour alone.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cli/markup.h"
#include "cli/report.h"
#include "cli/report_text.h"
#include "cli/verdict.h"
#include "session/assess.h"
#include "diff/diff.h"
#include "rules/compute.h"

namespace tv::cli {

namespace {

constexpr const char* kStyle = R"(
body{font-family:system-ui,sans-serif;margin:1.5em;color:#1d2230;background:#fafbfc}
h1{font-size:1.5em}h2{border-bottom:2px solid #d0d4dc;padding-bottom:.2em;margin-top:1.6em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #d0d4dc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#eef0f4}pre{margin:0;font:12px/1.35 ui-monospace,monospace;white-space:pre-wrap}
.badge{display:inline-block;padding:0 .5em;border-radius:.7em;font-size:.85em;font-weight:600}
.changed .badge,.badge.changed{background:#ffe8b3;color:#6b4500}.badge.unchanged{background:#e4e7ec;color:#4a5060}.badge.failed{background:#fde2e1;color:#8a1c14}
.ok{background:#d8f3dc;color:#14532d;font-weight:600}.bad{background:#fddede;color:#7f1d1d;font-weight:600}
.diff{width:100%;table-layout:fixed}.diff td{padding:0 .3em}.diff .mark{width:1.2em;text-align:center;font-family:monospace}
.d-same{background:#fff}.d-renamed{background:#eef4ff}.d-changed{background:#fff4d6}.d-added{background:#e3f8e6}
.d-removed{background:#fde6e6}.d-gap td{color:#778;background:#f3f4f6;font-style:italic}
details{margin:.3em 0}summary{cursor:pointer}body.hide-unchanged .unchanged{display:none}
.bar{background:#6b8cce;height:.8em}.barcell{width:30em}
.c-equivalent{background:#d8f3dc}.c-different{background:#fff4d6}.c-refused{background:#fddede}.c-failed{background:#f2c9f2}
.note{color:#556}
)";

constexpr const char* kScript = R"(
document.getElementById('hide-unchanged').addEventListener('change', function (e) {
  document.body.classList.toggle('hide-unchanged', e.target.checked);
});
)";

std::string h(std::string_view s) { return escape_markup(s); }

std::string verdict_cell(const PipelineVerdict& v) {
  return fmt::format("<td class=\"{}\">{}</td>", v.ok ? "ok" : "bad", h(v.line));
}

char diff_mark(DiffKind k) {
  switch (k) {
    case DiffKind::same: return ' ';
    case DiffKind::renamed: return '=';
    case DiffKind::changed: return '~';
    case DiffKind::added: return '+';
    case DiffKind::removed: return '-';
  }
  return ' ';
}

// A side-by-side table of a statement diff; runs of more than 6 unchanged statements are folded.
std::string side_by_side(const TraceDiff& d, const std::string& left, const std::string& right) {
  std::string out = fmt::format("<table class=\"diff\"><tr><th class=\"mark\"></th><th>{}</th><th class=\"mark\"></th><th>{}</th></tr>\n",
                                h(left), h(right));
  const auto& rows = d.statements;
  for (size_t i = 0; i < rows.size();) {
    size_t run = i;
    while (run < rows.size() && rows[run].kind == DiffKind::same) ++run;
    if (run - i > 6) {
      for (size_t k = i; k < run; ++k) {
        if (k == i + 2) {
          out += fmt::format("<tr class=\"d-gap\"><td></td><td colspan=\"3\">… {} unchanged statements …</td></tr>\n", run - i - 4);
          k = run - 2;
        }
        out += fmt::format("<tr class=\"d-same\"><td class=\"mark\"></td><td><pre>{}</pre></td><td class=\"mark\"></td><td><pre>{}</pre></td></tr>\n",
                           h(rows[k].left_text), h(rows[k].right_text));
      }
      i = run;
      continue;
    }
    const auto& r = rows[i];
    char m = diff_mark(r.kind);
    out += fmt::format("<tr class=\"d-{}\"><td class=\"mark\">{}</td><td><pre>{}</pre></td><td class=\"mark\">{}</td><td><pre>{}</pre></td></tr>\n",
                       diff_kind_name(r.kind), r.left >= 0 ? m : ' ', h(r.left_text), r.right >= 0 ? m : ' ', h(r.right_text));
    ++i;
  }
  return out + "</table>\n";
}

std::string badge(bool changed) {
  return changed ? "<span class=\"badge changed\">changed</span>" : "<span class=\"badge unchanged\">unchanged</span>";
}

std::string stages_section(const PipelineRecord& p) {
  std::string out;
  const PrintOptions diff_options{0, true, false};
  for (auto kind : kTraceKinds) {
    const auto& stages = p.stages.of(kind);
    if (stages.empty()) continue;
    auto name = std::string(trace_kind_name(kind));
    out += fmt::format("<h3>{} ({} stage{})</h3>\n<table><tr><th>#</th><th>pass</th><th>status</th><th>ms</th></tr>\n", name, stages.size(),
                       stages.size() == 1 ? "" : "s");
    for (size_t i = 0; i < stages.size(); ++i)
      out += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td></tr>\n",
                         stages[i].changed ? "changed" : "unchanged", i, h(stages[i].pass),
                         stages[i].failed() ? "<span class=\"badge failed\">" + h(stage_state(stages[i])) + "</span>" : badge(stages[i].changed),
                         stages[i].milliseconds);
    out += "</table>\n";
    if (stages[0].trace)
      out += fmt::format("<details><summary>stage 0: {} (the first {} trace)</summary><pre>{}</pre></details>\n", h(stages[0].pass),
                         name, h(print_trace(*stages[0].trace)));
    for (size_t i = 1; i < stages.size(); ++i) {
      const auto &a = stages[i - 1], &b = stages[i];
      if (!a.trace || !b.trace) continue;
      auto d = diff_traces(*a.trace, *b.trace, diff_options);
      out += fmt::format("<details class=\"{}\"><summary>stage {} → {}: {} {} ({} changed, {} added, {} removed)</summary>\n{}</details>\n",
                         b.changed ? "changed" : "unchanged", i - 1, i, h(b.pass), badge(b.changed), d.count(DiffKind::changed),
                         d.count(DiffKind::added), d.count(DiffKind::removed),
                         side_by_side(d, fmt::format("{} {}: {}", name, i - 1, a.pass), fmt::format("{} {}: {}", name, i, b.pass)));
    }
    if (stages.back().trace)
      out += fmt::format("<details><summary>final {} trace, all subsymbol levels</summary><pre>{}</pre></details>\n", name,
                         h(print_trace(*stages.back().trace)));
  }
  return out;
}

std::string replay_section(const PipelineRecord& p) {
  if (!p.replay) return "<p class=\"note\">not replayed</p>\n";
  std::string out = "<h3>replay against " + h(p.spec.reference()) + "</h3>\n<table><tr><th>rank</th><th>tensor</th><th>max abs</th><th>max rel</th><th>tolerance</th><th>result</th></tr>\n";
  for (const auto& r : p.replay->ranks) {
    if (!r.error.empty()) out += fmt::format("<tr><td>{}</td><td colspan=\"4\">{}</td><td class=\"bad\">FAIL</td></tr>\n", r.rank, h(r.error));
    for (const auto* list : {&r.outputs, &r.gradients})
      for (const auto& t : *list)
        out += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.3e}</td><td>{:.3e}</td><td>{:.0e}</td><td class=\"{}\">{}</td></tr>\n", r.rank,
                           h(t.name), t.max_abs, t.max_rel, t.tolerance, t.pass ? "ok" : "bad", t.pass ? "PASS" : "FAIL");
    if (!r.first_non_finite.empty())
      out += fmt::format("<tr><td>{}</td><td colspan=\"5\" class=\"bad\">first NaN/Inf: {}</td></tr>\n", r.rank, h(r.first_non_finite));
    if (r.cuda_graph)
      out += fmt::format("<tr><td>{}</td><td colspan=\"5\" class=\"{}\">CUDA graph: {}</td></tr>\n", r.rank,
                         r.cuda_graph->matches() ? "ok" : "bad", h(r.cuda_graph->describe()));
  }
  out += "</table>\n";
  // The 20 slowest top-level bound symbols over all ranks.
  std::vector<std::pair<int, const SymbolTiming*>> timings;
  for (const auto& r : p.replay->ranks)
    for (const auto& t : r.timings) timings.emplace_back(r.rank, &t);
  std::stable_sort(timings.begin(), timings.end(), [](auto& a, auto& b) { return a.second->microseconds > b.second->microseconds; });
  if (timings.size() > 20) timings.resize(20);
  if (timings.empty()) return out;
  double slowest = std::max(timings.front().second->microseconds, 1e-9);
  out += "<h3>slowest bound symbols (top 20)</h3>\n<table><tr><th>rank</th><th>trace</th><th>#</th><th>symbol</th><th>output</th><th>µs</th><th class=\"barcell\"></th></tr>\n";
  for (const auto& [rank, t] : timings)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}{}</td><td class=\"barcell\"><div class=\"bar\" style=\"width:{:.1f}%\"></div></td></tr>\n",
                       rank, h(t->trace), t->index, h(t->symbol), h(t->output), t->microseconds, t->device_timer ? " (gpu)" : "",
                       100.0 * t->microseconds / slowest);
  return out + "</table>\n";
}

std::string comparison_section(const Capture& c, const Comparison& cmp) {
  const auto& a = c.pipelines[cmp.left];
  const auto& b = c.pipelines[cmp.right];
  std::string out = fmt::format("<h2 class=\"{}\">{}</h2>\n", cmp.verdict == Verdict::equivalent ? "ok" : "bad",
                                h(comparison_line(c, cmp)));
  out += "<table><tr><th>trace</th><th>stage</th><th>left pass</th><th>right pass</th><th>status</th></tr>\n";
  for (const auto& s : cmp.stages)
    out += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", s.equal ? "same" : "differs",
                       h(s.kind), s.stage, h(s.left_pass), h(s.right_pass),
                       s.equal ? "<span class=\"badge unchanged\">same program</span>" : "<span class=\"badge changed\">different</span>");
  out += "</table>\n";
  for (auto kind : kTraceKinds) {
    auto fa = a.stages.last(kind), fb = b.stages.last(kind);
    if (!fa || !fb) continue;
    auto d = diff_traces(*fa, *fb, PrintOptions{0, true, false});
    auto name = std::string(trace_kind_name(kind));
    out += fmt::format("<details{}><summary>final {} traces: {}</summary>\n{}</details>\n", d.same_program ? "" : " open", name,
                       d.same_program ? (d.same_text ? "identical" : "same program, different names") : "DIFFERENT",
                       side_by_side(d, a.spec.label(), b.spec.label()));
  }
  return out;
}

std::string rules_section(const RulesMatrix& m) {
  std::string out = fmt::format("<h2>Composition rules ({}, {} ranks)</h2>\n<p class=\"note\">Row applied first, then column (jit added last when neither is jit), compared with the reverse order.</p>\n<table><tr><th>first \\ then</th>",
                                h(m.model), m.world_size);
  for (const auto& t : m.transforms) out += "<th>" + h(t) + "</th>";
  out += "</tr>\n";
  auto cell = [](const RuleCell& c) {
    auto v = std::string(c.word());
    return fmt::format("<td class=\"c-{}\" title=\"{}\"><b>{}</b>{}</td>", v, h(c.detail), v, c.rule.empty() ? "" : "<br>" + h(c.rule));
  };
  for (const auto& a : m.transforms) {
    out += "<tr><th>" + h(a) + "</th>";
    for (const auto& b : m.transforms) {
      const auto* c = m.find({a, b});
      out += c ? cell(*c) : "<td>?</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n<h3>all cells</h3>\n<table><tr><th>order</th><th>compared with</th><th>verdict</th><th>rule</th><th>detail</th></tr>\n";
  for (const auto& c : m.cells)
    out += fmt::format("<tr><td>{}{}</td><td>{}</td>{}<td>{}</td><td>{}</td></tr>\n", h(fmt::format("{}", fmt::join(c.order, ","))),
                       c.semantics == "lazy" ? "" : " (" + h(c.semantics) + ")", h(fmt::format("{}", fmt::join(c.versus, ","))),
                       fmt::format("<td class=\"c-{}\">{}</td>", c.word(), h(c.label())),
                       h(c.rule), h(c.detail));
  out += "</table>\n<h3>rules</h3>\n<dl>\n";
  for (const auto& [rule, text] : m.explanations) out += "<dt><b>" + h(rule) + "</b></dt><dd>" + h(text) + "</dd>\n";
  return out + "</dl>\n";
}

}  // namespace

std::string html_report(const Capture& c, const std::string& name) {
  std::string out = fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Thunder Viz report: {}</title>\n<style>{}</style></head>\n<body>\n",
                                h(name), kStyle);
  out += fmt::format("<h1>Thunder Viz report: {}</h1>\n<p>model <b>{}</b>", h(name), h(c.model.name));
  for (const auto& [k, v] : c.model.params) out += " " + h(k) + "=" + h(v);
  out += fmt::format(", {} parameter(s):", c.model.parameters.size());
  for (const auto& p : c.model.parameters) out += fmt::format(" <code>{} [{}] {}</code>", h(p.name), fmt::join(p.shape, ", "), short_name(p.dtype));
  out += "</p>\n<p><label><input type=\"checkbox\" id=\"hide-unchanged\"> hide unchanged stages</label>"
         " <span class=\"note\">— diff marks: <code>~</code> changed, <code>+</code> added, <code>-</code> removed, <code>=</code> renamed only</span></p>\n";
  if (!c.pipelines.empty()) {
    out += "<h2>Pipelines</h2>\n<table><tr><th>#</th><th>order</th><th>world</th><th>device</th><th>verdict</th><th>error</th></tr>\n";
    for (int i = 0; i < static_cast<int>(c.pipelines.size()); ++i) {
      const auto& p = c.pipelines[i];
      out += fmt::format("<tr><td><a href=\"#pipeline-{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td>{4}<td>{5}</td></tr>\n", i,
                         h(p.spec.label()), p.spec.world_size, h(p.spec.device), verdict_cell(pipeline_verdict(c, i)), h(p.error));
    }
    out += "</table>\n";
  }
  for (const auto& cmp : c.comparisons) out += comparison_section(c, cmp);
  for (int i = 0; i < static_cast<int>(c.pipelines.size()); ++i) {
    const auto& p = c.pipelines[i];
    out += fmt::format("<h2 id=\"pipeline-{}\">Pipeline {} [{}], world {}, {}</h2>\n", i, i, h(p.spec.label()), p.spec.world_size, h(p.spec.device));
    for (const auto& reason : p.outcome.reasons) out += fmt::format("<p class=\"bad\">{}</p>\n", h(reason));
    out += stages_section(p) + replay_section(p);
  }
  if (c.rules) out += rules_section(*c.rules);
  return out + "<script>" + kScript + "</script>\n</body></html>\n";
}

}  // namespace tv::cli
