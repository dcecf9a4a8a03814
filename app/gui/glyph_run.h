// Glyph runs: text drawn into an ImDrawList span by span, one reservation for many spans.
// Contract: `text()` writes exactly the vertices and indices ImDrawList::AddText writes for the
// same span (same positions, texture coordinates, colours, clipping and order), without its per-call
// work: the trace view draws a few thousand glyphs a frame in a few hundred coloured spans, and a
// still frame's layout is mostly that. Characters outside ASCII, and line breaks, are drawn by
// AddText itself. Between `line()` (or `close()`) and the next `text()` the list is the caller's;
// `close()` must come before any other drawing into the same list while a run is open.
#pragma once
#include <imgui.h>

#include <array>
#include <string_view>

namespace tv::gui {

class GlyphRun {
 public:
  GlyphRun(ImDrawList* draw, const ImFont* font, float size);
  GlyphRun(const GlyphRun&) = delete;
  GlyphRun& operator=(const GlyphRun&) = delete;
  ~GlyphRun() { close(); }

  // The next spans hold at most `bytes` characters in all (a line's length and its number's).
  void line(size_t bytes) {
    close();
    budget_ = bytes;
  }
  // Draws `text` at `pos` (its top left corner, rounded down to whole pixels as AddText does).
  void text(ImVec2 pos, ImU32 colour, std::string_view text);
  // Gives back what was reserved and not written; another draw call may follow.
  void close();

 private:
  void open();

  ImDrawList* draw_;
  const ImFont* font_;
  float size_, scale_;                            // scale_: size_ over the font's own size
  std::array<const ImFontGlyph*, 128> ascii_{};  // FindGlyph of each ASCII code, looked up once
  size_t budget_ = 0;                             // characters the open reservation may still take
  bool open_ = false;
  int idx_expected_size_ = 0;                     // the index buffer's size with the reservation
  ImDrawVert* vtx_ = nullptr;
  ImDrawIdx* idx_ = nullptr;
  unsigned int vtx_index_ = 0;
};

}  // namespace tv::gui
