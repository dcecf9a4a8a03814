// GlyphRun against ImDrawList::AddText: the same spans give the same vertices, indices and
// commands, whatever the clipping, colours and characters, and draw calls between spans.
#include "gui/glyph_run.h"

#include <gtest/gtest.h>
#include <imgui.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tv::gui {
namespace {

struct Span {
  ImVec2 pos;
  ImU32 colour;
  std::string text;
  bool rect_before = false;  // another primitive drawn right before the span
};

class GlyphRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    ImGui::GetIO().Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    font = ImGui::GetIO().Fonts->Fonts[0];
  }
  void TearDown() override { ImGui::DestroyContext(); }

  std::unique_ptr<ImDrawList> fresh_list(unsigned flags = 0) const {
    auto list = std::make_unique<ImDrawList>(ImGui::GetDrawListSharedData());
    list->_ResetForNewFrame();
    list->Flags |= flags;
    list->PushClipRect(ImVec2(10, 20), ImVec2(300, 200));
    list->PushTextureID(ImGui::GetIO().Fonts->TexID);
    return list;
  }

  // Each line's spans drawn by AddText, and by a GlyphRun with one reservation per line.
  void expect_same(const std::vector<std::vector<Span>>& lines, float size) const {
    auto by_add_text = fresh_list(), by_run = fresh_list();
    for (const auto& line : lines)
      for (const Span& s : line) {
        if (s.rect_before) by_add_text->AddRectFilled(s.pos, ImVec2(s.pos.x + 5, s.pos.y + 5), 0xFF00FF00);
        by_add_text->AddText(font, size, s.pos, s.colour, s.text.data(), s.text.data() + s.text.size());
      }
    {
      GlyphRun run(by_run.get(), font, size);
      for (const auto& line : lines) {
        size_t bytes = 0;
        for (const Span& s : line) bytes += s.text.size();
        run.line(bytes);
        for (const Span& s : line) {
          if (s.rect_before) {
            run.close();
            by_run->AddRectFilled(s.pos, ImVec2(s.pos.x + 5, s.pos.y + 5), 0xFF00FF00);
          }
          run.text(s.pos, s.colour, s.text);
        }
      }
    }
    const ImDrawList& a = *by_add_text;
    const ImDrawList& b = *by_run;
    ASSERT_EQ(a.VtxBuffer.Size, b.VtxBuffer.Size);
    ASSERT_EQ(a.IdxBuffer.Size, b.IdxBuffer.Size);
    EXPECT_EQ(0, std::memcmp(a.VtxBuffer.Data, b.VtxBuffer.Data, sizeof(ImDrawVert) * a.VtxBuffer.Size));
    EXPECT_EQ(0, std::memcmp(a.IdxBuffer.Data, b.IdxBuffer.Data, sizeof(ImDrawIdx) * a.IdxBuffer.Size));
    ASSERT_EQ(a.CmdBuffer.Size, b.CmdBuffer.Size);
    for (int i = 0; i < a.CmdBuffer.Size; ++i) {
      EXPECT_EQ(a.CmdBuffer[i].ElemCount, b.CmdBuffer[i].ElemCount) << "command " << i;
      EXPECT_EQ(a.CmdBuffer[i].IdxOffset, b.CmdBuffer[i].IdxOffset) << "command " << i;
      EXPECT_EQ(a.CmdBuffer[i].VtxOffset, b.CmdBuffer[i].VtxOffset) << "command " << i;
    }
    EXPECT_EQ(a._VtxCurrentIdx, b._VtxCurrentIdx);
    EXPECT_EQ(a._VtxWritePtr - a.VtxBuffer.Data, b._VtxWritePtr - b.VtxBuffer.Data);
    EXPECT_EQ(a._IdxWritePtr - a.IdxBuffer.Data, b._IdxWritePtr - b.IdxBuffer.Data);
  }

  ImFont* font = nullptr;
};

TEST_F(GlyphRunTest, WritesWhatAddTextWritesForColouredSpans) {
  const float size = font->FontSize;
  std::vector<std::vector<Span>> lines;
  for (int l = 0; l < 12; ++l) {
    const float y = 20.3f + l * 14.0f;
    lines.push_back({{{12.0f, y}, 0xFF808080, std::to_string(l + 1)},
                     {{40.7f, y}, 0xFF0000FF, "t42"},
                     {{61.7f, y}, 0xFFFFFFFF, " = "},
                     {{82.7f, y}, 0x96FF8800, "ltorch.add(t1, t41, alpha=1)"},
                     {{299.5f, y}, 0xFF00FFFF, "# past the right edge"}});
  }
  expect_same(lines, size);
}

TEST_F(GlyphRunTest, WritesWhatAddTextWritesAtAnotherSizeWithClippedLines) {
  std::vector<std::vector<Span>> lines = {
      {{{12.0f, 0.0f}, 0xFFFFFFFF, "above the clip rectangle"}},
      {{{12.0f, 10.0f}, 0xFFFFFFFF, "crossing its top"}},
      {{{3.5f, 50.0f}, 0xFFFFFFFF, "left of it, then inside"}, {{150.0f, 50.0f}, 0x00FFFFFF, "transparent"}},
      {{{12.0f, 199.5f}, 0xFFFFFFFF, "on its bottom edge"}},
      {{{12.0f, 260.0f}, 0xFFFFFFFF, "below it"}},
  };
  expect_same(lines, font->FontSize * 1.5f);
}

TEST_F(GlyphRunTest, WritesWhatAddTextWritesAroundOtherPrimitivesAndOtherCharacters) {
  std::vector<std::vector<Span>> lines = {
      {{{12.0f, 30.0f}, 0xFFFFFFFF, "plain"}, {{60.0f, 30.0f}, 0xFF00FF00, "boxed", true}, {{110.0f, 30.0f}, 0xFFFFFFFF, "tab\there"}},
      {{{12.0f, 50.0f}, 0xFFFFFFFF, "caf\xc3\xa9 \xe2\x86\x92 t1"}, {{120.0f, 50.0f}, 0xFFFFFFFF, "after", true}},
      {{{12.0f, 70.0f}, 0xFFFFFFFF, ""}, {{30.0f, 70.0f}, 0xFFFFFFFF, "two\nlines"}},
  };
  expect_same(lines, font->FontSize);
}

// A run longer than its line's budget is drawn by AddText rather than past the reservation.
TEST_F(GlyphRunTest, TextBeyondTheBudgetIsStillDrawnAsAddTextDrawsIt) {
  auto by_add_text = fresh_list(), by_run = fresh_list();
  const std::string text = "longer than the budget";
  by_add_text->AddText(font, font->FontSize, ImVec2(20, 40), 0xFFFFFFFF, text.data(), text.data() + text.size());
  {
    GlyphRun run(by_run.get(), font, font->FontSize);
    run.line(4);
    run.text(ImVec2(20, 40), 0xFFFFFFFF, text);
  }
  ASSERT_EQ(by_add_text->VtxBuffer.Size, by_run->VtxBuffer.Size);
  EXPECT_EQ(0, std::memcmp(by_add_text->VtxBuffer.Data, by_run->VtxBuffer.Data, sizeof(ImDrawVert) * by_run->VtxBuffer.Size));
}

// Past 65 536 vertices a list with 16-bit indices starts a command with a vertex offset; each
// command's indices must then name vertices of the buffer.
TEST_F(GlyphRunTest, ManyLinesCrossTheSixteenBitIndexLimit) {
  auto list = fresh_list(ImDrawListFlags_AllowVtxOffset);
  list->PushClipRect(ImVec2(0, 0), ImVec2(4000, 100000));
  const std::string text(60, 'x');
  {
    GlyphRun run(list.get(), font, font->FontSize);
    for (int l = 0; l < 2000; ++l) {
      run.line(text.size());
      run.text(ImVec2(0, l * 14.0f), 0xFFFFFFFF, text);
    }
  }
  EXPECT_EQ(list->VtxBuffer.Size, 2000 * 60 * 4);
  EXPECT_GT(list->CmdBuffer.Size, 2);
  for (const ImDrawCmd& cmd : list->CmdBuffer)
    for (unsigned i = 0; i < cmd.ElemCount; ++i) {
      const unsigned vertex = cmd.VtxOffset + list->IdxBuffer[static_cast<int>(cmd.IdxOffset + i)];
      ASSERT_LT(vertex, static_cast<unsigned>(list->VtxBuffer.Size));
    }
}

}  // namespace
}  // namespace tv::gui
