#include "gui/glyph_run.h"

namespace tv::gui {

GlyphRun::GlyphRun(ImDrawList* draw, const ImFont* font, float size)
    : draw_(draw), font_(font), size_(size), scale_(size / font->FontSize) {
  for (unsigned c = 0; c < ascii_.size(); ++c) ascii_[c] = font->FindGlyph(static_cast<ImWchar>(c));
}

void GlyphRun::open() {
  const int glyphs = static_cast<int>(budget_);
  draw_->PrimReserve(glyphs * 6, glyphs * 4);
  idx_expected_size_ = draw_->IdxBuffer.Size;
  vtx_ = draw_->_VtxWritePtr;
  idx_ = draw_->_IdxWritePtr;
  vtx_index_ = draw_->_VtxCurrentIdx;
  open_ = true;
}

// As ImFont::RenderText ends: the list's sizes and write pointers where the writing stopped.
void GlyphRun::close() {
  if (!open_) return;
  draw_->VtxBuffer.Size = static_cast<int>(vtx_ - draw_->VtxBuffer.Data);
  draw_->IdxBuffer.Size = static_cast<int>(idx_ - draw_->IdxBuffer.Data);
  draw_->CmdBuffer[draw_->CmdBuffer.Size - 1].ElemCount -= idx_expected_size_ - draw_->IdxBuffer.Size;
  draw_->_VtxWritePtr = vtx_;
  draw_->_IdxWritePtr = idx_;
  draw_->_VtxCurrentIdx = vtx_index_;
  open_ = false;
}

void GlyphRun::text(ImVec2 pos, ImU32 colour, std::string_view text) {
  const size_t taken = text.size() < budget_ ? text.size() : budget_;
  if (text.empty() || (colour & IM_COL32_A_MASK) == 0) {
    budget_ -= taken;
    return;
  }
  bool plain = text.size() <= budget_;
  for (char c : text) plain = plain && static_cast<unsigned char>(c) < 0x80 && c != '\n' && c != '\r';
  if (!plain) {
    close();
    draw_->AddText(font_, size_, pos, colour, text.data(), text.data() + text.size());
    budget_ -= taken;
    return;
  }
  // ImFont::RenderText for one line of ASCII: whole pixels, lines above or below the clip
  // rectangle skipped, glyphs outside it horizontally not written.
  const ImVec4& clip = draw_->_CmdHeader.ClipRect;
  float x = static_cast<float>(static_cast<int>(pos.x));
  const float y = static_cast<float>(static_cast<int>(pos.y));
  if (y > clip.w || y + font_->FontSize * scale_ < clip.y) {
    budget_ -= taken;
    return;
  }
  if (!open_) open();
  budget_ -= taken;
  const ImU32 untinted = colour | ~IM_COL32_A_MASK;
  for (char ch : text) {
    const ImFontGlyph* glyph = ascii_[static_cast<unsigned char>(ch)];
    if (!glyph) continue;
    const float advance = glyph->AdvanceX * scale_;
    if (glyph->Visible) {
      const float x1 = x + glyph->X0 * scale_, x2 = x + glyph->X1 * scale_;
      const float y1 = y + glyph->Y0 * scale_, y2 = y + glyph->Y1 * scale_;
      if (x1 <= clip.z && x2 >= clip.x) {
        const ImU32 col = glyph->Colored ? untinted : colour;
        idx_[0] = static_cast<ImDrawIdx>(vtx_index_);
        idx_[1] = static_cast<ImDrawIdx>(vtx_index_ + 1);
        idx_[2] = static_cast<ImDrawIdx>(vtx_index_ + 2);
        idx_[3] = static_cast<ImDrawIdx>(vtx_index_);
        idx_[4] = static_cast<ImDrawIdx>(vtx_index_ + 2);
        idx_[5] = static_cast<ImDrawIdx>(vtx_index_ + 3);
        vtx_[0].pos = ImVec2(x1, y1), vtx_[0].uv = ImVec2(glyph->U0, glyph->V0), vtx_[0].col = col;
        vtx_[1].pos = ImVec2(x2, y1), vtx_[1].uv = ImVec2(glyph->U1, glyph->V0), vtx_[1].col = col;
        vtx_[2].pos = ImVec2(x2, y2), vtx_[2].uv = ImVec2(glyph->U1, glyph->V1), vtx_[2].col = col;
        vtx_[3].pos = ImVec2(x1, y2), vtx_[3].uv = ImVec2(glyph->U0, glyph->V1), vtx_[3].col = col;
        vtx_ += 4;
        idx_ += 6;
        vtx_index_ += 4;
      }
    }
    x += advance;
  }
}

}  // namespace tv::gui
