// The platform window: GLFW + OpenGL 3 + Dear ImGui set up and torn down in one place.
// Contract: `open` fails with a message (no display, no OpenGL 3) instead of aborting; a hidden
// window (screenshots) renders exactly like a visible one. `read_pixels` returns the back buffer
// of the last rendered frame as RGBA rows, top row first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct GLFWwindow;

namespace tv::gui {

struct WindowOptions {
  int width = 1600, height = 1000;
  bool visible = true;
  std::string title = "Thunder Viz";
};

class Window {
 public:
  ~Window();
  // Returns false and sets `error` when no window can be opened.
  bool open(const WindowOptions&, std::string* error);
  bool should_close() const;
  // Polls events (waits up to `wait_seconds` for one when > 0), starts an ImGui frame.
  void begin_frame(double wait_seconds = 0.0);
  void end_frame();    // render and swap
  // Keep a copy of the back buffer of every frame rendered while on (before the swap).
  void capture_pixels(bool on) { capture_pixels_ = on; }
  std::vector<uint8_t> read_pixels(int* width, int* height) const;
  GLFWwindow* handle() const { return window_; }
  const std::string& font_warning() const { return font_warning_; }

 private:
  void load_fonts();
  GLFWwindow* window_ = nullptr;
  bool imgui_ready_ = false;
  std::string font_warning_;
  bool capture_pixels_ = false;
  int last_width_ = 0, last_height_ = 0;
  std::vector<uint8_t> pixels_;
};

}  // namespace tv::gui
