// The platform window: GLFW + OpenGL 3 + Dear ImGui set up and torn down in one place.
// Contract: `open` fails with a message (no display, no OpenGL 3) instead of aborting; a hidden
// window (screenshots) renders exactly like a visible one. `read_pixels` returns the back buffer
// of the last rendered frame as RGBA rows, top row first. A synthetic mouse is fed to ImGui after
// the platform backend's update, exactly where the backend feeds the real one. A frame whose draw
// lists, size and background equal the last drawn frame's is not drawn or swapped again (the
// window already shows it), unless the window was exposed or pixels are being captured.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct GLFWwindow;

namespace tv::gui {

// A mouse that replaces the platform's when active (the scripted driver, the GUI benchmark):
// position in window pixels (negative: no mouse over the window), the left button, and the wheel
// turned during the next frame (lines; negative scrolls down).
struct SyntheticMouse {
  bool active = false;
  float x = -1, y = -1;
  bool down = false;
  float wheel = 0;
};

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
  // From the next begin_frame on, ImGui sees this mouse instead of the platform's (when active).
  void set_synthetic_mouse(const SyntheticMouse& mouse) { synthetic_mouse_ = mouse; }
  void end_frame();    // render and swap, unless the window already shows this frame
  // Draw every frame, changed or not (the GUI benchmark's cost of drawing).
  void draw_unchanged_frames(bool on) { draw_unchanged_ = on; }
  // Frames drawn and swapped since the window opened (the others were unchanged).
  long drawn_frames() const { return drawn_frames_; }
  // Keep a copy of the back buffer of every frame rendered while on (before the swap).
  void capture_pixels(bool on) { capture_pixels_ = on; }
  std::vector<uint8_t> read_pixels(int* width, int* height) const;
  // Writes the pixels read_pixels returns as an opaque PNG; false when the file cannot be written.
  bool write_png(const std::string& path) const;
  // Those pixels as the bytes of an opaque PNG; empty when there are none.
  std::string png() const;
  GLFWwindow* handle() const { return window_; }
  const std::string& font_warning() const { return font_warning_; }

 private:
  void load_fonts();
  GLFWwindow* window_ = nullptr;
  bool imgui_ready_ = false;
  std::string font_warning_;
  bool capture_pixels_ = false;
  SyntheticMouse synthetic_mouse_;
  int last_width_ = 0, last_height_ = 0;
  std::vector<uint8_t> pixels_;
  bool draw_unchanged_ = false;
  bool exposed_ = true;             // the platform asked for the window's contents again
  std::vector<char> drawn_;         // the last drawn frame's draw data, flattened
  long drawn_frames_ = 0;
};

}  // namespace tv::gui
