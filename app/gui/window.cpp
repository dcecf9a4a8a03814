#include "gui/window.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <cfloat>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "gui/theme.h"

namespace tv::gui {
namespace {

std::string glfw_error_text;
void on_glfw_error(int code, const char* text) { glfw_error_text = text ? text : "unknown GLFW error"; }

// The font: DejaVu Sans Mono from assets/ or the system; ImGui's default font when neither exists.
std::string find_font() {
  const char* candidates[] = {
#ifdef TV_ASSETS_DIR
      TV_ASSETS_DIR "/fonts/DejaVuSansMono.ttf",
#endif
      "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
  };
  for (const char* path : candidates)
    if (std::filesystem::exists(path)) return path;
  return "";
}

// Everything that decides a frame's pixels, in order: the framebuffer's size, the clear colour, and
// each draw list's vertices, indices and commands. ImGui's only texture is the font atlas, built
// once, so a texture id names the same pixels from frame to frame.
template <typename Put>
void walk_frame(const ImDrawData& data, int width, int height, const ImVec4& background, Put put) {
  put(&width, sizeof width);
  put(&height, sizeof height);
  put(&background, sizeof background);
  put(&data.DisplayPos, sizeof data.DisplayPos);
  put(&data.DisplaySize, sizeof data.DisplaySize);
  put(&data.FramebufferScale, sizeof data.FramebufferScale);
  put(&data.CmdListsCount, sizeof data.CmdListsCount);
  for (int i = 0; i < data.CmdListsCount; ++i) {
    const ImDrawList& list = *data.CmdLists[i];
    const int vertices = list.VtxBuffer.Size, indices = list.IdxBuffer.Size, commands = list.CmdBuffer.Size;
    put(&vertices, sizeof vertices);
    put(list.VtxBuffer.Data, sizeof(ImDrawVert) * vertices);
    put(&indices, sizeof indices);
    put(list.IdxBuffer.Data, sizeof(ImDrawIdx) * indices);
    put(&commands, sizeof commands);
    for (const ImDrawCmd& cmd : list.CmdBuffer) {
      put(&cmd.ClipRect, sizeof cmd.ClipRect);
      put(&cmd.TextureId, sizeof cmd.TextureId);
      put(&cmd.VtxOffset, sizeof cmd.VtxOffset);
      put(&cmd.IdxOffset, sizeof cmd.IdxOffset);
      put(&cmd.ElemCount, sizeof cmd.ElemCount);
      put(&cmd.UserCallback, sizeof cmd.UserCallback);
    }
  }
}

// Whether `drawn` holds this frame, compared in place (a still frame copies nothing).
bool same_frame(const std::vector<char>& drawn, const ImDrawData& data, int width, int height, const ImVec4& background) {
  size_t at = 0;
  bool same = true;
  walk_frame(data, width, height, background, [&](const void* bytes, size_t size) {
    if (!same) return;
    same = size <= drawn.size() - at && std::memcmp(drawn.data() + at, bytes, size) == 0;
    at += size;
  });
  return same && at == drawn.size();
}

void keep_frame(std::vector<char>* drawn, const ImDrawData& data, int width, int height, const ImVec4& background) {
  drawn->clear();
  walk_frame(data, width, height, background, [drawn](const void* bytes, size_t size) {
    const char* p = static_cast<const char*>(bytes);
    drawn->insert(drawn->end(), p, p + size);
  });
}

}  // namespace

bool Window::open(const WindowOptions& options, std::string* error) {
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    *error = "cannot open a window: " + (glfw_error_text.empty() ? std::string("glfwInit failed") : glfw_error_text) +
             " (is DISPLAY set? run under Xvfb: `xvfb-run thunder-viz ...`)";
    return false;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_VISIBLE, options.visible ? GLFW_TRUE : GLFW_FALSE);
  window_ = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
  if (!window_) {
    *error = "cannot create an OpenGL 3.3 window: " + glfw_error_text;
    glfwTerminate();
    return false;
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(options.visible ? 1 : 0);
  glfwSetWindowUserPointer(window_, this);
  glfwSetWindowRefreshCallback(window_,
                               [](GLFWwindow* w) { static_cast<Window*>(glfwGetWindowUserPointer(w))->exposed_ = true; });

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // fixed layout: nothing to remember
  apply_theme();
  load_fonts();
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  ImGui_ImplOpenGL3_Init("#version 330");
  imgui_ready_ = true;
  return true;
}

void Window::load_fonts() {
  ImGuiIO& io = ImGui::GetIO();
  std::string path = find_font();
  if (!path.empty() && io.Fonts->AddFontFromFileTTF(path.c_str(), 15.0f)) return;
  font_warning_ = "warning: DejaVuSansMono.ttf not found (install fonts-dejavu-core); using ImGui's default font";
  std::cerr << font_warning_ << "\n";
  io.Fonts->AddFontDefault();
}

Window::~Window() {
  if (imgui_ready_) {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
  }
  if (window_) {
    glfwDestroyWindow(window_);
    glfwTerminate();
  }
}

bool Window::should_close() const { return glfwWindowShouldClose(window_); }

void Window::begin_frame(double wait_seconds) {
  if (wait_seconds > 0) glfwWaitEventsTimeout(wait_seconds);
  else glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();  // ImGui 1.86: writes io.MousePos and io.MouseDown from GLFW's state
  if (synthetic_mouse_.active) {
    ImGuiIO& io = ImGui::GetIO();
    const bool present = synthetic_mouse_.x >= 0 && synthetic_mouse_.y >= 0;
    io.MousePos = present ? ImVec2(synthetic_mouse_.x, synthetic_mouse_.y) : ImVec2(-FLT_MAX, -FLT_MAX);
    for (bool& down : io.MouseDown) down = false;
    io.MouseDown[0] = synthetic_mouse_.down;
    io.MouseWheel = synthetic_mouse_.wheel;
  }
  ImGui::NewFrame();
}

void Window::end_frame() {
  ImGui::Render();
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  const auto bg = theme().background;
  // Under a software renderer drawing is most of a frame; a still UI need not pay it again.
  const ImDrawData& data = *ImGui::GetDrawData();
  if (!exposed_ && !draw_unchanged_ && !capture_pixels_ && same_frame(drawn_, data, w, h, bg)) return;
  keep_frame(&drawn_, data, w, h, bg);
  exposed_ = false;
  ++drawn_frames_;
  glViewport(0, 0, w, h);
  glClearColor(bg.x, bg.y, bg.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  glFinish();
  last_width_ = w;
  last_height_ = h;
  pixels_.resize(static_cast<size_t>(w) * h * 4);
  if (capture_pixels_) {
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
  }
  glfwSwapBuffers(window_);
}

std::vector<uint8_t> Window::read_pixels(int* width, int* height) const {
  *width = last_width_;
  *height = last_height_;
  // OpenGL rows go bottom-up; flip to top-down.
  std::vector<uint8_t> out(pixels_.size());
  size_t row = static_cast<size_t>(last_width_) * 4;
  for (int y = 0; y < last_height_; ++y)
    std::copy_n(pixels_.data() + (last_height_ - 1 - y) * row, row, out.data() + y * row);
  return out;
}

std::string Window::png() const {
  int width = 0, height = 0;
  auto pixels = read_pixels(&width, &height);
  if (pixels.empty()) return {};
  for (size_t i = 3; i < pixels.size(); i += 4) pixels[i] = 255;  // opaque PNG
  std::string bytes;
  auto append = [](void* out, void* data, int size) { static_cast<std::string*>(out)->append(static_cast<char*>(data), size); };
  if (!stbi_write_png_to_func(append, &bytes, width, height, 4, pixels.data(), width * 4)) return {};
  return bytes;
}

bool Window::write_png(const std::string& path) const {
  int width = 0, height = 0;
  auto pixels = read_pixels(&width, &height);
  if (pixels.empty()) return false;
  for (size_t i = 3; i < pixels.size(); i += 4) pixels[i] = 255;  // opaque PNG
  return stbi_write_png(path.c_str(), width, height, 4, pixels.data(), width * 4) != 0;
}

}  // namespace tv::gui
