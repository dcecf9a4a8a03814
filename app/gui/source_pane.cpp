#include "gui/source_pane.h"

#include <imgui.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gui/theme.h"
#include "gui/trace_text.h"
#include "transforms/source_provenance.h"

#ifndef TV_SOURCE_ROOT
#define TV_SOURCE_ROOT ""
#endif

namespace tv::gui {
namespace {

bool read_lines(const std::filesystem::path& path, std::vector<std::string>& out) {
  std::error_code ec;
  // A regular file of source size only: a capture may name anything (a device, a 10 GB log).
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) > (16u << 20) || ec)
    return false;
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) out.push_back(expand_tabs(line));
  return true;
}

std::string trimmed(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::string focus_key(const SourceLine& l) { return l.file + ":" + std::to_string(l.line); }

}  // namespace

const SourceFile& find_source_file(const std::string& file, const std::string& capture_folder) {
  static std::map<std::pair<std::string, std::string>, SourceFile> cache;
  auto key = std::make_pair(file, capture_folder);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  SourceFile f;
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates{fs::path(file)};
  if (!capture_folder.empty()) candidates.push_back(fs::path(capture_folder) / fs::path(file).filename());
  if (fs::path(file).is_relative() && *TV_SOURCE_ROOT) candidates.push_back(fs::path(TV_SOURCE_ROOT) / file);
  for (const auto& c : candidates) {
    f.tried.push_back(c.string());
    std::vector<std::string> lines;
    if (read_lines(c, lines)) {
      f.path = c.string();
      f.lines = std::move(lines);
      break;
    }
  }
  return cache.emplace(key, std::move(f)).first->second;
}

void SourcePane::update_statement_lines(const Session& s, const Trace* shown) {
  const std::string& file = s.source_focus->line.file;
  if (shown == lines_of_ && file == lines_file_) return;
  lines_of_ = shown;
  lines_file_ = file;
  statement_lines.clear();
  if (!shown) return;
  TracePtr forward = s.selected.kind == TraceKind::backward ? s.links_forward(s.selected.pipeline) : nullptr;
  std::set<int> lines;
  std::map<const std::string*, int> parsed;  // each distinct location parsed once
  for (const SourceRef& src : statement_sources(*shown, forward.get())) {
    if (!src) continue;
    auto it = parsed.find(src.get());
    if (it == parsed.end()) {
      auto l = source_line(*src);
      it = parsed.emplace(src.get(), l && l->file == file ? l->line : 0).first;
    }
    if (it->second > 0) lines.insert(it->second);
  }
  statement_lines.assign(lines.begin(), lines.end());
}

void SourcePane::draw(Session& s, float width) {
  const Theme& t = theme();
  ImGui::BeginChild("source-pane", ImVec2(width, 0), true);
  if (!s.source_focus) {
    ImGui::EndChild();
    return;
  }
  const SourceLine focus = s.source_focus->line;  // a copy: a click below replaces the focus
  TracePtr shown = s.trace(s.selected);
  update_statement_lines(s, shown.get());
  const SourceFile& file = find_source_file(focus.file, s.source_folder());
  shown_file = focus.file;
  read_from = file.path;
  const bool in_file = focus.line >= 1 && focus.line <= static_cast<int>(file.lines.size());
  code_matches = focus.code.empty() || (in_file && trimmed(file.lines[focus.line - 1]) == trimmed(focus.code));

  ImGui::TextWrapped("source %s:%d", focus.file.c_str(), focus.line);
  const size_t here = s.from_source(s.selected).size();
  ImGui::TextColored(t.muted, "%zu statement%s of this stage came from it", here, here == 1 ? "" : "s");
  if (ImGui::SmallButton("previous stage with it")) s.step_source_stage(-1);
  if (s.targets.enabled) s.targets.mark_last_item("source/previous-stage");
  ImGui::SameLine();
  if (ImGui::SmallButton("next stage with it")) s.step_source_stage(+1);
  if (s.targets.enabled) s.targets.mark_last_item("source/next-stage");
  ImGui::SameLine();
  if (ImGui::SmallButton("close")) {
    s.stop_following_source();
    ImGui::EndChild();
    return;
  }
  if (s.targets.enabled) s.targets.mark_last_item("source/close");
  ImGui::PushStyleColor(ImGuiCol_Text, t.muted);
  if (file.path.empty()) {
    std::string tried;
    for (const auto& p : file.tried) tried += "\n  " + p;
    ImGui::TextWrapped("the file is not on this machine; looked in:%s\nthe line as the trace recorded it:", tried.c_str());
  } else if (!code_matches) {
    ImGui::TextWrapped("%s: line %d now reads otherwise than when the trace was recorded (the file changed); the "
                       "recorded line:", file.path.c_str(), focus.line);
  } else {
    ImGui::TextWrapped("%s", file.path.c_str());
  }
  ImGui::PopStyleColor();
  if (file.path.empty() || !code_matches) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.token[static_cast<int>(Token::plain)]), "%5d  %s", focus.line,
                       trimmed(focus.code).c_str());
    if (file.path.empty()) {
      ImGui::EndChild();
      return;
    }
  }
  ImGui::Separator();

  ImGui::BeginChild("source-lines", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize();
  const float char_w = font->GetCharAdvance('M');
  const float line_h = ImGui::GetTextLineHeight() + 1.0f;
  const float gutter = 7 * char_w;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered_window = ImGui::IsWindowHovered();
  if (scrolled_for_ != focus_key(focus)) {
    scrolled_for_ = focus_key(focus);
    ImGui::SetScrollY(std::max(0.0f, (focus.line - 1) * line_h - ImGui::GetWindowHeight() / 3));
  }
  int clicked = 0;
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, 0));
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(file.lines.size()), line_h);
  while (clipper.Step()) {
    for (int l = clipper.DisplayStart; l < clipper.DisplayEnd; ++l) {
      const int number = l + 1;
      const std::string& text = file.lines[l];
      ImVec2 pos = ImGui::GetCursorScreenPos();
      const float w = gutter + (text.size() + 2) * char_w;
      const ImVec2 end(pos.x + std::max(w, ImGui::GetWindowWidth()), pos.y + line_h);
      const bool has_statements = std::binary_search(statement_lines.begin(), statement_lines.end(), number);
      if (number == focus.line) draw->AddRectFilled(pos, end, t.source_link);
      const bool hover = hovered_window && mouse.y >= pos.y && mouse.y < pos.y + line_h;
      if (hover) draw->AddRectFilled(pos, end, t.current_line);
      if (has_statements)
        draw->AddCircleFilled(ImVec2(pos.x + char_w * 0.6f, pos.y + line_h / 2), char_w * 0.35f, t.source_link | IM_COL32_A_MASK);
      char gutter_text[16];
      std::snprintf(gutter_text, sizeof gutter_text, "%5d", number);
      draw->AddText(font, size, ImVec2(pos.x + char_w, pos.y), t.line_number, gutter_text);
      draw->AddText(font, size, ImVec2(pos.x + gutter, pos.y), t.token[static_cast<int>(Token::plain)], text.c_str());
      if (s.targets.enabled) s.targets.mark("source/line/" + std::to_string(number), {pos.x, pos.y, end.x, end.y});
      if (hover) {
        ImGui::SetTooltip(has_statements ? "line %d: click to mark the statements that came from it, at every stage"
                                         : "line %d: no statement of this stage came from it; click to follow it anyway",
                          number);
        if (ImGui::IsMouseClicked(0)) clicked = number;
      }
      ImGui::Dummy(ImVec2(w, line_h));
    }
  }
  ImGui::PopStyleVar();
  ImGui::EndChild();
  ImGui::EndChild();
  if (clicked > 0 && clicked != focus.line) {
    std::string code = clicked <= static_cast<int>(file.lines.size()) ? file.lines[clicked - 1] : std::string();
    s.follow_source(SourceLine{focus.file, clicked, code});
  }
}

}  // namespace tv::gui
