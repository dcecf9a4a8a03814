#include "gui/trace_view.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <cctype>
#include <cstdio>
#include <string>

#include "gui/glyph_run.h"
#include "gui/theme.h"
#include "transforms/gradient_links.h"

namespace tv::gui {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const SymbolTiming* timing_of(const RankResult& rank, TraceKind kind, const std::string& proxy) {
  for (const auto& t : rank.timings)
    if (t.output == proxy && t.trace == trace_kind_name(kind)) return &t;
  return nullptr;
}

const TensorStats* stats_of(const RankResult& rank, TraceKind kind, const std::string& proxy) {
  auto it = rank.proxies.find(std::string(trace_kind_name(kind)) + ":" + proxy);
  if (it == rank.proxies.end()) it = rank.proxies.find(proxy);
  return it == rank.proxies.end() ? nullptr : &it->second;
}

}  // namespace

ProxyInfo describe_proxy(const Session& s, const TraceText& text, int index) {
  const Proxy& proxy = *text.proxies[index];
  ProxyInfo info;
  info.name = proxy.name;
  info.type = type_text(proxy);
  info.is_tensor = proxy.is_tensor();
  if (info.is_tensor) {
    if (s.request) info.requires_grad = proxy.requires_grad;  // a live run: the traces are the engine's own
    if (proxy.distribution != Distribution::none)
      info.distribution = std::string(distribution_name(proxy.distribution));
  }
  info.definition_line = text.definition_line(index);
  info.lines_naming = text.use_lines(index).size();
  const auto* p = s.pipeline(s.selected.pipeline);
  if (!p || !p->replay) return info;
  info.replayed = true;
  info.final_stage = s.selected.stage == static_cast<int>(p->stages.of(s.selected.kind).size()) - 1;
  for (const auto& rank : p->replay->ranks) {
    const TensorStats* stats = stats_of(rank, s.selected.kind, proxy.name);
    const SymbolTiming* timing = timing_of(rank, s.selected.kind, proxy.name);
    if (!stats && !timing) continue;
    ProxyRankInfo r;
    r.rank = rank.rank;
    if (stats) r.stats = *stats;
    if (timing) r.timing = *timing;
    info.ranks.push_back(std::move(r));
  }
  return info;
}

void TraceView::refresh(const TracePtr& trace, int effective_depth) {
  if (trace == trace_ && effective_depth == text_depth_) return;
  bool same_trace = trace == trace_;
  // Another depth of the same trace keeps the selected proxy, by name (indices are per text).
  std::string selected_name;
  if (same_trace && selected_proxy >= 0 && selected_proxy < static_cast<int>(text_.proxies.size()))
    selected_name = text_.proxies[selected_proxy]->name;
  trace_ = trace;
  text_depth_ = effective_depth;
  text_ = build_trace_text(*trace, effective_depth);
  ++text_version_;
  if (!same_trace) marked_line = -1;
  selected_proxy = selected_name.empty() ? -1 : text_.proxy_named(selected_name);
  matched_query_.assign(1, '\x01');  // force a new search (not operator=: GCC 12 warns falsely)
  update_matches();
}

// The followed gradient in the shown trace: in a forward, the followed statement; in a backward,
// the statements its rule made. A statement printed inside a level the depth slider hides is marked
// on the top-level line that holds it.
void TraceView::update_gradient_lines(const Session& s) {
  const bool follows = s.gradient && s.gradient->pipeline == s.selected.pipeline &&
                       (s.selected.kind == TraceKind::forward || s.selected.kind == TraceKind::backward);
  std::string key;  // every followed key, one string
  if (follows)
    for (const auto& k : s.gradient->keys) key += k + " ";
  if (key == gradient_key_ && gradient_text_ == text_version_) return;
  gradient_key_ = key;
  gradient_text_ = text_version_;
  gradient_lines.clear();
  saved_proxies.clear();
  if (key.empty()) return;
  std::vector<const BoundSymbol*> linked;
  for (const auto& k : s.gradient->keys) {
    if (s.selected.kind == TraceKind::forward) {
      if (const BoundSymbol* b = forward_statement(*trace_, k)) linked.push_back(b);
    } else {
      for (const BoundSymbol* b : backward_statements(*trace_, k)) linked.push_back(b);
    }
  }
  gradient_lines = lines_stating(linked);
  for (const auto& name : s.gradient->saved)
    if (int p = text_.proxy_named(name); p >= 0) saved_proxies.push_back(p);
}

std::vector<int> TraceView::lines_stating(const std::vector<const BoundSymbol*>& statements) const {
  std::set<const BoundSymbol*> wanted(statements.begin(), statements.end()), printed;
  std::set<int> lines;
  for (int l = 0; l < static_cast<int>(text_.line_owner.size()); ++l)
    if (wanted.count(text_.line_owner[l])) {
      lines.insert(l);
      printed.insert(text_.line_owner[l]);
    }
  if (printed.size() < wanted.size())
    for (size_t i = 0; i < trace_->body.size(); ++i) {
      bool holds = false;
      walk(trace_->body[i].subsymbols, [&](const BoundSymbol& b, int) { holds = holds || (wanted.count(&b) && !printed.count(&b)); });
      if (holds && text_.statement_line[i] >= 0) lines.insert(text_.statement_line[i]);
    }
  return {lines.begin(), lines.end()};
}

// The statements from the followed source line, at any level (Session::from_source).
void TraceView::update_source_lines(const Session& s) {
  const std::string key =
      s.source_focus ? s.source_focus->line.file + ":" + std::to_string(s.source_focus->line.line) : std::string();
  if (key == source_key_ && source_text_ == text_version_) return;
  source_key_ = key;
  source_text_ = text_version_;
  source_lines = key.empty() ? std::vector<int>() : lines_stating(s.from_source(s.selected));
}

void TraceView::update_matches() {
  if (query == matched_query_) return;
  matched_query_ = query;
  matches.clear();
  match = -1;
  if (query.empty()) return;
  std::string q = lower(query);
  for (int l = 0; l < static_cast<int>(text_.line_count()); ++l)
    if (lower(std::string(text_.line(l))).find(q) != std::string::npos) matches.push_back(l);
}

void TraceView::find(int direction) {
  update_matches();
  if (matches.empty()) return;
  if (match < 0) {
    // Start from the first match at or after the top of the view.
    auto it = std::lower_bound(matches.begin(), matches.end(), first_visible);
    match = it == matches.end() ? 0 : static_cast<int>(it - matches.begin());
    if (direction < 0) match = (match + static_cast<int>(matches.size()) - 1) % static_cast<int>(matches.size());
  } else {
    match = (match + direction + static_cast<int>(matches.size())) % static_cast<int>(matches.size());
  }
  marked_line = matches[match];
  scroll_to = marked_line;
}

void TraceView::draw(Session& s) {
  const Theme& t = theme();
  hovered.reset();
  const Stage* stage = s.stage(s.selected);
  TracePtr trace = s.trace(s.selected);
  if (!stage || !trace) {
    if (std::string why = s.unreadable(s.selected); !why.empty())
      ImGui::TextWrapped("%s", why.c_str());
    else
      ImGui::TextColored(t.muted, "%s", s.capture ? "select a stage at the left" : "no capture yet");
    return;
  }
  if (trace != depth_of_) {  // walking every bound symbol is O(trace): once per trace
    depth_of_ = trace;
    max_depth_ = max_subsymbol_depth(*trace);
  }
  const int max_depth = max_depth_;
  refresh(trace, std::clamp(depth, 0, max_depth));
  update_gradient_lines(s);
  update_source_lines(s);
  if (s.scroll_to_gradient && !gradient_lines.empty()) marked_line = scroll_to = gradient_lines.front();
  else if (s.scroll_to_source && !source_lines.empty()) marked_line = scroll_to = source_lines.front();
  s.scroll_to_gradient = false;
  s.scroll_to_source = false;
  if (s.jump_to_statement >= 0) {
    if (s.jump_to_statement < static_cast<int>(text_.statement_line.size()))
      marked_line = scroll_to = text_.statement_line[s.jump_to_statement];
    s.jump_to_statement = -1;
  }
  ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && ImGui::IsKeyPressed('F')) {
    search_open = true;
    focus_search = true;
  }
  draw_toolbar(s, max_depth);
  draw_gradient_bar(s);
  if (!s.source_note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, t.muted);
    ImGui::TextWrapped("%s", s.source_note.c_str());
    ImGui::PopStyleColor();
  }
  draw_failure(s, *stage);
  if (!s.source_focus) return draw_lines(s, *stage, 0);
  const float avail = ImGui::GetContentRegionAvail().x;
  const float pane = std::clamp(avail * 0.38f, std::min(320.0f, avail * 0.5f), 720.0f);
  draw_lines(s, *stage, avail - pane - ImGui::GetStyle().ItemSpacing.x);
  ImGui::SameLine();
  source_pane.draw(s, pane);
}

// A stage where a pass stopped: its failing line is marked in draw_lines; the pipeline's error (what
// was read when, by whom, the rule, the fix) is shown above the trace.
void TraceView::draw_failure(Session& s, const Stage& stage) {
  failed_line = -1;
  if (!stage.failed()) return;
  if (stage.failed_at < static_cast<int>(text_.statement_line.size())) failed_line = text_.statement_line[stage.failed_at];
  const auto* p = s.pipeline(s.selected.pipeline);
  std::string why = p && !p->error.empty() ? p->error : std::string("the pass stopped at this bound symbol");
  ImGui::PushStyleColor(ImGuiCol_Text, theme().error);
  ImGui::TextWrapped("failed at line %d: %s", failed_line + 1, why.c_str());
  ImGui::PopStyleColor();
  if (s.targets.enabled) s.targets.mark_last_item("trace/failure");
}

// The followed gradient: the forward statement, what its rule made in the backward, what they read
// of the saved values, and buttons to either side.
void TraceView::draw_gradient_bar(Session& s) {
  const Theme& t = theme();
  if (!s.gradient_note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, t.muted);
    ImGui::TextWrapped("%s", s.gradient_note.c_str());
    ImGui::PopStyleColor();
  }
  if (!s.gradient || s.gradient->pipeline != s.selected.pipeline) return;
  const GradientFocus& g = *s.gradient;
  std::string saved;
  for (const auto& name : g.saved) saved += (saved.empty() ? "" : ", ") + name;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(t.gradient_link | IM_COL32_A_MASK));
  ImGui::TextWrapped("gradient of %s: %d backward statement%s, saved values read: %s",
                     g.forward_statement.empty() ? g.key.c_str() : g.forward_statement.c_str(), g.backward_statements,
                     g.backward_statements == 1 ? "" : "s", saved.empty() ? "none" : saved.c_str());
  ImGui::PopStyleColor();
  if (ImGui::SmallButton("show forward")) s.show_gradient_side(TraceKind::forward);
  if (s.targets.enabled) s.targets.mark_last_item("trace/gradient/forward");
  ImGui::SameLine();
  if (ImGui::SmallButton("show backward")) s.show_gradient_side(TraceKind::backward);
  if (s.targets.enabled) s.targets.mark_last_item("trace/gradient/backward");
  ImGui::SameLine();
  if (ImGui::SmallButton("stop following")) s.gradient.reset();
  ImGui::SameLine();
  ImGui::TextColored(t.muted, "%zu line%s marked here", gradient_lines.size(), gradient_lines.size() == 1 ? "" : "s");
}

void TraceView::draw_statement_tooltip(const Session& s, const BoundSymbol& b) const {
  ImGui::BeginTooltip();
  ImGui::Text("%s", b.name().c_str());
  ImGui::TextColored(theme().muted, "click: show the source line it came from (the source pane)");
  if (s.selected.kind == TraceKind::forward && !b.gradient_of.empty())
    ImGui::TextColored(theme().muted, "click: mark the backward statements its gradient rule made and the saved values they read");
  else if (s.selected.kind == TraceKind::backward && !b.gradient_of.empty())
    ImGui::TextColored(theme().muted, "from the gradient of %s: click to show that forward statement", b.gradient_of.c_str());
  else if (std::any_of(b.subsymbols.begin(), b.subsymbols.end(), [](const BoundSymbol& m) { return !m.gradient_of.empty(); }))
    ImGui::TextColored(theme().muted, "a fusion region: click to follow the forward statements of its members");
  else if (s.selected.kind == TraceKind::backward)
    ImGui::TextColored(theme().muted, "no forward statement made this one");
  ImGui::EndTooltip();
}

void TraceView::draw_toolbar(Session& s, int max_depth) {
  const Theme& t = theme();
  const auto* p = s.pipeline(s.selected.pipeline);
  const Stage* stage = s.stage(s.selected);
  ImGui::Text("P%d %s  %s #%d  %s", s.selected.pipeline, p->spec.label().c_str(),
              std::string(trace_kind_name(s.selected.kind)).c_str(), s.selected.stage, stage->pass.c_str());
  ImGui::SameLine();
  ImGui::TextColored(t.muted, "(%zu lines, %zu statements)", text_.line_count(), depth_of_->body.size());
  int shown = std::clamp(depth, 0, max_depth);
  ImGui::SetNextItemWidth(160);
  if (ImGui::SliderInt("subsymbol depth", &shown, 0, std::max(max_depth, 0))) depth = shown;
  ImGui::SameLine();
  if (ImGui::Button(search_open ? "close search" : "search (Ctrl+F)")) {
    search_open = !search_open;
    focus_search = search_open;
  }
  if (selected_proxy >= 0 && selected_proxy < static_cast<int>(text_.proxies.size())) {
    const auto& uses = text_.use_lines(selected_proxy);
    ImGui::SameLine();
    ImGui::Text("| %s: defined line %d, on %zu lines", text_.proxies[selected_proxy]->name.c_str(),
                text_.definition_line(selected_proxy) + 1, uses.size());
    ImGui::SameLine();
    if (ImGui::SmallButton("go to definition")) scroll_to = marked_line = text_.definition_line(selected_proxy);
    ImGui::SameLine();
    if (ImGui::SmallButton("clear")) selected_proxy = -1;
  }
  if (search_open) {
    if (focus_search) {
      ImGui::SetKeyboardFocusHere();
      focus_search = false;
    }
    ImGui::SetNextItemWidth(300);
    if (ImGui::InputText("find##trace", &query, ImGuiInputTextFlags_EnterReturnsTrue)) {
      find(ImGui::GetIO().KeyShift ? -1 : +1);
      ImGui::SetKeyboardFocusHere(-1);
    }
    update_matches();
    ImGui::SameLine();
    if (ImGui::Button("prev")) find(-1);
    ImGui::SameLine();
    if (ImGui::Button("next")) find(+1);
    ImGui::SameLine();
    if (query.empty()) ImGui::TextColored(t.muted, "type, then Enter (Shift+Enter: previous)");
    else if (matches.empty()) ImGui::TextColored(t.error, "no match");
    else ImGui::Text("%d / %zu lines", match + 1, matches.size());
  }
}

void TraceView::draw_lines(Session& s, const Stage& stage, float view_width) {
  const Theme& t = theme();
  ImGui::BeginChild("trace-text", ImVec2(view_width, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize();
  const float char_w = font->GetCharAdvance('M');  // CalcTextSize rounds up: columns would drift
  const float line_h = ImGui::GetTextLineHeight() + 1.0f;
  const int digits = static_cast<int>(std::to_string(text_.line_count()).size());
  const float gutter = (digits + 1) * char_w;
  const float width = gutter + (text_.max_columns + 2) * char_w;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  UiTargets& targets = s.targets;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered_window = ImGui::IsWindowHovered();
  int hovered_proxy = -1;
  int hovered_comment = -1;  // a line stating no statement: a source comment can be followed
  const BoundSymbol* hovered_statement = nullptr;

  if (scroll_to >= 0) {
    ImGui::SetScrollY(std::max(0.0f, scroll_to * line_h - ImGui::GetWindowHeight() / 3));
    scroll_to = -1;
  }
  first_visible = static_cast<int>(ImGui::GetScrollY() / line_h);
  visible_rows = static_cast<int>(ImGui::GetWindowHeight() / line_h);

  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, 0));
  ImGuiListClipper clipper;
  const int selected_definition = selected_proxy >= 0 ? text_.definition_line(selected_proxy) : -1;
  clipper.Begin(static_cast<int>(text_.line_count()), line_h);
  GlyphRun glyphs(draw, font, size);  // closed before any other drawing into `draw`
  while (clipper.Step()) {
    for (int l = clipper.DisplayStart; l < clipper.DisplayEnd; ++l) {
      const std::string_view line = text_.line(l);
      glyphs.line(line.size() + sizeof "2147483647");
      ImVec2 pos = ImGui::GetCursorScreenPos();
      ImVec2 text_pos(pos.x + gutter, pos.y);
      bool mouse_on_line = hovered_window && mouse.y >= pos.y && mouse.y < pos.y + line_h;
      // Line backgrounds: the marked line, search matches, the selected proxy's definition.
      if (l == marked_line)
        draw->AddRectFilled(pos, ImVec2(pos.x + width, pos.y + line_h), t.search_highlight);
      else if (!matches.empty() && std::binary_search(matches.begin(), matches.end(), l))
        draw->AddRectFilled(pos, ImVec2(pos.x + width, pos.y + line_h), t.current_line);
      if (l == selected_definition)
        draw->AddRectFilled(pos, ImVec2(pos.x + width, pos.y + line_h), t.definition_highlight);
      if (std::binary_search(gradient_lines.begin(), gradient_lines.end(), l))
        draw->AddRectFilled(pos, ImVec2(pos.x + width, pos.y + line_h), t.gradient_link);
      if (std::binary_search(source_lines.begin(), source_lines.end(), l))
        draw->AddRectFilled(pos, ImVec2(pos.x + gutter - char_w / 2, pos.y + line_h), t.source_link | IM_COL32_A_MASK);
      const BoundSymbol* owner = l < static_cast<int>(text_.line_owner.size()) ? text_.line_owner[l] : nullptr;
      if (!owner && mouse_on_line && mouse.x >= text_pos.x) hovered_comment = l;
      if (l == failed_line) draw_failed_line(s, line, text_pos, char_w, line_h);
      // The line number, right-aligned in `digits` columns (to_chars: snprintf's "%*d" was a visible
      // part of a still frame's cost).
      char number[16];
      char* end = std::to_chars(number, number + sizeof number, l + 1).ptr;
      const float pad = static_cast<float>(digits - (end - number)) * char_w;
      glyphs.text(ImVec2(pos.x + pad, pos.y), t.line_number, std::string_view(number, end - number));
      for (const Span& span : text_.spans(l)) {
        ImVec2 p(text_pos.x + span.begin * char_w, text_pos.y);
        ImVec2 q(p.x + span.length * char_w, p.y + line_h);
        if (span.proxy >= 0 && span.proxy == selected_proxy) {
          glyphs.close();
          draw->AddRectFilled(p, q, t.use_highlight);
        }
        if (span.proxy >= 0 && std::find(saved_proxies.begin(), saved_proxies.end(), span.proxy) != saved_proxies.end()) {
          glyphs.close();
          draw->AddRect(p, q, t.saved_value | IM_COL32_A_MASK);
        }
        if (span.token == Token::symbol && owner) {
          if (targets.enabled && !owner->outputs.empty())
            targets.mark("trace/call/" + owner->outputs.front()->name, {p.x, p.y, q.x, q.y});
          if (mouse_on_line && mouse.x >= p.x && mouse.x < q.x) {
            hovered_statement = owner;
            glyphs.close();
            draw->AddLine(ImVec2(p.x, q.y - 1), ImVec2(q.x, q.y - 1), t.token[static_cast<int>(Token::symbol)]);
          }
        }
        if (span.proxy >= 0 && targets.enabled)
          targets.mark("trace/proxy/" + text_.proxies[span.proxy]->name, {p.x, p.y, q.x, q.y});
        if (span.proxy >= 0 && mouse_on_line && mouse.x >= p.x && mouse.x < q.x) {
          hovered_proxy = span.proxy;
          glyphs.close();
          draw->AddLine(ImVec2(p.x, q.y - 1), ImVec2(q.x, q.y - 1), t.token[static_cast<int>(Token::proxy)]);
        }
        ImU32 colour = t.token[static_cast<int>(span.token)];
        if (span.in_comment) colour = (colour & 0x00FFFFFF) | (static_cast<ImU32>(150) << IM_COL32_A_SHIFT);
        glyphs.text(p, colour, line.substr(span.begin, span.length));
      }
      glyphs.close();
      ImGui::Dummy(ImVec2(width, line_h));
    }
  }
  ImGui::PopStyleVar();
  hovered.reset();
  if (hovered_proxy >= 0) {
    hovered = describe_proxy(s, text_, hovered_proxy);
    draw_proxy_tooltip(*hovered);
    if (ImGui::IsMouseClicked(0)) selected_proxy = selected_proxy == hovered_proxy ? -1 : hovered_proxy;
  } else if (hovered_statement) {
    draw_statement_tooltip(s, *hovered_statement);
    if (ImGui::IsMouseClicked(0)) s.click_statement(*hovered_statement);
  } else if (hovered_comment >= 0) {
    const std::string text(text_.line(hovered_comment));
    const size_t hash = text.find_first_not_of(' ');
    std::optional<SourceLine> line;
    if (hash != std::string::npos && text[hash] == '#') line = source_line(text.substr(text.find_first_not_of(' ', hash + 1)));
    if (line) {
      ImGui::SetTooltip("%s:%d\nclick: show it in the source pane and mark every statement from it", line->file.c_str(),
                        line->line);
      if (ImGui::IsMouseClicked(0)) s.follow_source(*line);
    }
  }
  ImGui::EndChild();
}

// The failing bound symbol's line: a red band, its None argument boxed, the error's first line beside it.
void TraceView::draw_failed_line(Session& s, std::string_view line, ImVec2 text_pos, float char_w, float line_h) const {
  const ImU32 red = ImGui::ColorConvertFloat4ToU32(theme().error);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float end = text_pos.x + line.size() * char_w;
  draw->AddRectFilled(ImVec2(text_pos.x, text_pos.y), ImVec2(end, text_pos.y + line_h), (red & 0x00FFFFFF) | (60u << IM_COL32_A_SHIFT));
  if (auto at = line.find("None"); at != std::string_view::npos) {
    ImVec2 p(text_pos.x + at * char_w, text_pos.y), q(p.x + 4 * char_w, p.y + line_h);
    draw->AddRect(p, q, red, 0.0f, 0, 2.0f);
    if (s.targets.enabled) s.targets.mark("trace/failed-argument", {p.x, p.y, q.x, q.y});
  }
  const auto* pipeline = s.pipeline(s.selected.pipeline);
  std::string note = pipeline ? pipeline->error.substr(0, pipeline->error.find('\n')) : std::string();
  draw->AddText(ImVec2(end + 2 * char_w, text_pos.y), red, ("<- " + note).c_str());
}

void TraceView::draw_proxy_tooltip(const ProxyInfo& info) const {
  const Theme& t = theme();
  ImGui::BeginTooltip();
  ImGui::Text("%s", info.name.c_str());
  const ImVec4 type_colour = ImGui::ColorConvertU32ToFloat4(t.token[static_cast<int>(Token::type)]);
  ImGui::TextColored(type_colour, "\"%s\"", info.type.c_str());
  if (info.is_tensor) {
    if (info.requires_grad) ImGui::Text("requires_grad: %s", *info.requires_grad ? "True" : "False");
    else ImGui::TextColored(t.muted, "requires_grad: unknown (captures and printouts do not keep it)");
    if (!info.distribution.empty()) ImGui::Text("distribution: %s", info.distribution.c_str());
  }
  ImGui::Text("defined on line %d, named on %zu lines", info.definition_line + 1, info.lines_naming);
  if (!info.replayed) {
    ImGui::TextColored(t.muted, "no replay statistics in this capture");
  } else if (info.ranks.empty()) {
    ImGui::TextColored(t.muted, "the replay recorded nothing for this name");
  } else if (!info.final_stage) {
    ImGui::TextColored(t.muted, "statistics of the final trace (the one replayed), where this name may differ");
  }
  for (const auto& r : info.ranks) {
    ImGui::Separator();
    ImGui::Text("rank %d", r.rank);
    if (r.stats) {
      const TensorStats& st = *r.stats;
      ImGui::Text("shape %s %s", shape_text(st.shape).c_str(), std::string(short_name(st.dtype)).c_str());
      ImGui::Text("min %.6g  max %.6g  mean %.6g", st.min, st.max, st.mean);
      if (st.nan_count || st.inf_count)
        ImGui::TextColored(t.error, "NaN %lld  Inf %lld", static_cast<long long>(st.nan_count),
                           static_cast<long long>(st.inf_count));
    }
    if (r.timing)
      ImGui::Text("produced by %s in %.1f us%s", r.timing->symbol.c_str(), r.timing->microseconds,
                  r.timing->device_timer ? " (CUDA events)" : "");
  }
  ImGui::TextColored(t.muted, "click: highlight definition and uses");
  ImGui::EndTooltip();
}

}  // namespace tv::gui
