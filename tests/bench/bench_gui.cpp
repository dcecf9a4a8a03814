// Frame times of the GUI (results in BENCHMARKS.md; run under an X server, e.g. Xvfb with Mesa's
// llvmpipe: tests/bench/run_gui_bench.sh does that):
//  (a) the trace view on a generated 100 000-line trace: still, scrolled with the mouse wheel, and
//      jumping to random lines (what search and jump-to-line do);
//  (b) the diff view on two generated 20 000-line traces that differ in a few hundred statements:
//      the first frame (which computes the diff), then still and wheel-scrolled frames;
//  (c) a capture file (e.g. a 32-layer gpt): time from asking to open it to the end of the first
//      frame that shows it, the frames drawn meanwhile, then trace-view frames.
// A frame is Window::begin_frame + App::frame + Window::end_frame (which waits for the GPU with
// glFinish), in a hidden window without vsync, with a synthetic mouse over the panel. The window
// draws a frame only when it differs from the last one drawn ("drawn" counts those); the still
// rows are also measured with every frame drawn, the cost of drawing that screen, and the trace's
// still frame once more against the empty window's in alternating blocks (the ratio's target), with
// what the trace adds to each part of the frame (begin_frame, the UI, end_frame).
// Usage: tv_bench_gui [--capture FILE.tvz.json] [--frames N] [--size WxH]
#include <GL/gl.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "generated_trace.h"
#include "format/parser.h"
#include "gui/app.h"
#include "gui/window.h"

using namespace tv;
using namespace tv::gui;

namespace {

using Clock = std::chrono::steady_clock;
constexpr float kWheel = -4.0f;  // wheel steps a frame, downwards (ImGui scrolls 5 font heights a step);
                                 // turned back at either end of the view

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The shared generated trace (generated_trace.h), parsed.
TracePtr generate_trace(int statements, bool annotated, bool variant) {
  ParseResult parsed = parse_trace(bench::generated_trace_text(statements, annotated, variant));
  if (!parsed) throw std::runtime_error("generated trace does not parse: " + parsed.error->describe("generated"));
  return parsed.trace;
}

PipelineRecord pipeline_of(const std::string& transform, TracePtr trace) {
  PipelineRecord r;
  r.spec.order = {transform};
  r.stages.record(TraceKind::forward, "acquisition", std::move(trace), 0);
  return r;
}

// One frame's times, ms: whole, Window::begin_frame, App::frame (the UI), Window::end_frame.
struct FrameTimes {
  double total, begin, ui, end;
};

// Frame times of one kind of frame: whole frames, and their parts.
struct Series {
  std::string what;
  std::vector<double> total, ui;
  std::vector<double> begin{}, end{};
  int vertices = 0;  // what the last frame drew (ImDrawData::TotalVtxCount)
  long drawn = 0;    // frames the window drew (the others equalled the frame before)
  void add(const FrameTimes& t, bool was_drawn) {
    total.push_back(t.total);
    begin.push_back(t.begin);
    ui.push_back(t.ui);
    end.push_back(t.end);
    drawn += was_drawn;
    vertices = ImGui::GetDrawData() ? ImGui::GetDrawData()->TotalVtxCount : 0;
  }
};

class Bench {
 public:
  Bench(Window& w, const WindowOptions& size) : window_(w), width_(size.width), height_(size.height) {}
  App app;

  FrameTimes frame(float wheel = 0) {
    drawn_before_ = window_.drawn_frames();
    SyntheticMouse m = mouse_;
    m.wheel = wheel;
    window_.set_synthetic_mouse(m);
    auto start = Clock::now();
    window_.begin_frame(0.0);
    auto ui_start = Clock::now();
    app.frame();
    auto end_start = Clock::now();
    window_.end_frame();
    auto done = Clock::now();
    auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    return {ms(done - start), ms(ui_start - start), ms(end_start - ui_start), ms(done - end_start)};
  }
  bool drawn() const { return window_.drawn_frames() > drawn_before_; }  // by the last frame()
  void add_frame(Series* s, float wheel = 0) {
    auto t = frame(wheel);
    s->add(t, drawn());
  }
  void frames(Series* s, int n, float wheel = 0) {
    for (int i = 0; i < n; ++i) add_frame(s, wheel);
  }
  // `n` frames turning the wheel `steps` a frame, downwards first; a frame that drew nothing (the
  // view at its end) turns the wheel the other way. `moved()` sums what each frame changed.
  template <typename Moved>
  void wheel_frames(Series* s, int n, float steps, Moved moved) {
    nudge_mouse();
    for (int i = 0; i < n; ++i) {
      add_frame(s, steps);
      moved();
      if (!drawn()) steps = -steps;
    }
  }
  // The same frames with every one drawn, changed or not.
  void frames_all_drawn(Series* s, int n) {
    window_.draw_unchanged_frames(true);
    frames(s, n);
    window_.draw_unchanged_frames(false);
  }
  // Brings `panel` to the front (empty), then hands `capture` to the session the way a load does
  // (through the worker) and draws until `ready`; returns the time of those frames: the frame
  // that adopts the capture and the panel's first frame, which builds its text or diff.
  template <typename Ready>
  double show(Capture capture, Panel panel, Ready ready) {
    app.session.select_panel(panel);
    for (int i = 0; i < 3; ++i) frame();
    app.session.worker.start("bench", [c = std::move(capture)](const ProgressFn&) { return c; });
    app.session.worker.join();
    double total = 0;
    for (int i = 0; i < 10 && !ready(); ++i) total += frame().total;
    if (!ready()) throw std::runtime_error("the panel did not show the capture");
    return total;
  }
  // The mouse at a fraction of the window's width and height (over the panel at the right).
  void put_mouse(float fx, float fy) {
    mouse_ = {true, fx * static_cast<float>(width_), fy * static_cast<float>(height_), false, 0};
  }
  // Moves the mouse past ImGui's drag threshold and back. ImGui keeps wheeling the window the wheel
  // last scrolled (an earlier bench's) until the mouse moves or two seconds pass, and still frames
  // that are not drawn take far less.
  void nudge_mouse() {
    const float by = 2 * ImGui::GetIO().MouseDragThreshold;
    mouse_.x += by;
    frame();
    mouse_.x -= by;
    frame();
  }
  // Scrolls the trace view back to its top (ImGui keeps a window's scroll between benches).
  void trace_to_top() {
    app.trace.scroll_to = 0;
    frame();
    frame();
  }

 private:
  Window& window_;
  long drawn_before_ = 0;
  int width_, height_;
  SyntheticMouse mouse_{true, -1, -1, false, 0};
};

void header() {
  std::printf("| view | content | frames | first frame ms | median ms | p95 ms | median UI ms | vertices | drawn | n |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
}

void row(const std::string& view, const std::string& content, const std::string& first_ms, const Series& s) {
  std::printf("| %s | %s | %s | %s | %.2f | %.2f | %.2f | %d | %ld | %zu |\n", view.c_str(), content.c_str(),
              s.what.c_str(), first_ms.c_str(), bench::percentile(s.total, 50), bench::percentile(s.total, 95),
              bench::percentile(s.ui, 50), s.vertices, s.drawn, s.total.size());
}

std::string fixed(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

// Wheel-scrolls the trace view for `n` frames; names the series with the lines moved per frame.
void wheel_trace(Bench& b, Series* s, int n) {
  long lines = 0;
  int at = b.app.trace.first_visible;
  b.wheel_frames(s, n, kWheel, [&] {
    lines += std::abs(b.app.trace.first_visible - at);
    at = b.app.trace.first_visible;
  });
  s->what += " (" + std::to_string(lines / n) + " lines a frame)";
}

void empty_window_bench(Window& window, const WindowOptions& size, int n) {
  Bench b(window, size);
  b.put_mouse(0.65f, 0.5f);
  Series still{"still", {}, {}}, drawn{"still, every frame drawn", {}, {}};
  b.frames(&still, n);
  b.frames_all_drawn(&drawn, n);
  row("(none)", "empty window, no capture", "-", still);
  row("(none)", "empty window, no capture", "-", drawn);
}

void trace_view_bench(Window& window, const WindowOptions& size, int n) {
  Bench b(window, size);
  b.put_mouse(0.65f, 0.5f);
  Capture c;
  c.model.name = "generated";
  c.pipelines.push_back(pipeline_of("jit", generate_trace(44'440, true, false)));  // 2.25 lines a statement
  double first = b.show(std::move(c), Panel::trace, [&] { return b.app.trace.text() != nullptr; });
  size_t lines = b.app.trace.text()->line_count();
  std::string content = std::to_string(lines) + " lines (generated)";
  Series still{"still, mouse on a line", {}, {}}, drawn{"still, every frame drawn", {}, {}},
      wheel{"wheel scrolling", {}, {}}, jump{"jump to a random line every frame", {}, {}};
  b.frames(&still, n);
  b.frames_all_drawn(&drawn, n);
  wheel_trace(b, &wheel, n);
  std::mt19937 random(7);
  for (int i = 0; i < n; ++i) {
    b.app.trace.scroll_to = static_cast<int>(random() % lines);
    b.add_frame(&jump);
  }
  row("trace", content, fixed(first), still);
  row("trace", content, "", drawn);
  row("trace", content, "", wheel);
  row("trace", content, "", jump);
}

// The 100 000-line trace's still frame against an empty window's, the two taken in alternating
// blocks of frames in one run, each block's first frames (which draw the screen the other left)
// left out: on a shared machine two rows taken seconds apart differ by more than the trace adds to
// a frame that is not drawn again, and alternating gives both the same host.
void interleaved_still_bench(Window& window, const WindowOptions& size, int n) {
  constexpr int kBlocks = 10, kSettle = 5;
  const int per_block = std::max(1, n / kBlocks);
  Bench empty(window, size), trace(window, size);
  empty.put_mouse(0.65f, 0.5f);
  trace.put_mouse(0.65f, 0.5f);
  Capture c;
  c.model.name = "generated";
  c.pipelines.push_back(pipeline_of("jit", generate_trace(44'440, true, false)));
  trace.show(std::move(c), Panel::trace, [&] { return trace.app.trace.text() != nullptr; });
  trace.trace_to_top();  // as the first still row saw it (ImGui kept the last bench's scroll)
  const std::string content = std::to_string(trace.app.trace.text()->line_count()) + " lines (generated)";
  Series empty_all{"still, interleaved with the trace's", {}, {}}, trace_all{"still, interleaved with the empty window's", {}, {}};
  std::vector<double> block_ratios;
  // A block's frames of `b`, added to `all`; returns their median.
  auto block_of = [&](Bench& b, Series* all) {
    for (int i = 0; i < kSettle; ++i) b.frame();
    b.frames(all, per_block);
    return bench::percentile({all->total.end() - per_block, all->total.end()}, 50);
  };
  for (int block = 0; block < kBlocks; ++block) {
    double empty_ms = 0, trace_ms = 0;
    if (block % 2 == 0) {
      empty_ms = block_of(empty, &empty_all);
      trace_ms = block_of(trace, &trace_all);
    } else {
      trace_ms = block_of(trace, &trace_all);
      empty_ms = block_of(empty, &empty_all);
    }
    block_ratios.push_back(trace_ms / empty_ms);
  }
  row("(none)", "empty window, no capture", "-", empty_all);
  row("trace", content, "", trace_all);
  std::sort(block_ratios.begin(), block_ratios.end());
  std::printf("still frame, trace / empty window, in %d alternating blocks of %d frames: ratio of the medians %.2f; "
              "per block: median %.2f, %.2f to %.2f\n",
              kBlocks, per_block, bench::percentile(trace_all.total, 50) / bench::percentile(empty_all.total, 50),
              bench::percentile(block_ratios, 50), block_ratios.front(), block_ratios.back());
  auto added = [&](const std::vector<double> Series::*part) {
    return bench::percentile(trace_all.*part, 50) - bench::percentile(empty_all.*part, 50);
  };
  std::printf("what the trace adds to a still frame, median ms: begin_frame %+.4f, UI %+.4f, end_frame %+.4f "
              "(the empty window's: %.4f, %.4f, %.4f)\n",
              added(&Series::begin), added(&Series::ui), added(&Series::end), bench::percentile(empty_all.begin, 50),
              bench::percentile(empty_all.ui, 50), bench::percentile(empty_all.end, 50));
}

void diff_view_bench(Window& window, const WindowOptions& size, int n) {
  Bench b(window, size);
  b.put_mouse(0.65f, 0.5f);
  Capture c;
  c.model.name = "generated";
  c.pipelines.push_back(pipeline_of("jit", generate_trace(20'000, false, false)));
  c.pipelines.push_back(pipeline_of("ddp", generate_trace(20'000, false, true)));
  b.app.session.diff.across_pipelines = true;
  double first = b.show(std::move(c), Panel::diff, [&] { return b.app.diff.current() != nullptr; });
  const TraceDiff& d = *b.app.diff.current();
  auto statements = [&](int p) {
    return std::to_string(b.app.session.stage({p, TraceKind::forward, 0})->trace->body.size());
  };
  std::string content = statements(0) + " and " + statements(1) + " one-line statements (generated): " +
                        std::to_string(d.statements.size()) + " rows, " +
                        std::to_string(d.count(DiffKind::changed)) + " ~ " + std::to_string(d.count(DiffKind::added)) +
                        " + " + std::to_string(d.count(DiffKind::removed)) + " -";
  Series still{"still", {}, {}}, wheel{"wheel scrolling (4 wheel steps a frame)", {}, {}};
  b.frames(&still, n);
  b.wheel_frames(&wheel, n, kWheel, [] {});
  row("diff", content, fixed(first), still);
  row("diff", content, "", wheel);
}

void capture_bench(Window& window, const WindowOptions& size, const std::string& path, int n) {
  Bench b(window, size);
  b.put_mouse(0.65f, 0.5f);
  b.app.session.select_panel(Panel::trace);
  for (int i = 0; i < 3; ++i) b.frame();
  auto start = Clock::now();
  b.app.session.load_file(path);
  Series loading{"frames drawn while loading", {}, {}};
  while (!b.app.session.capture && b.app.session.error.empty()) b.add_frame(&loading);
  if (!b.app.session.error.empty()) throw std::runtime_error(b.app.session.error);
  const double open_to_first = ms_since(start);  // the last frame above adopted the capture and drew it
  const double first = loading.total.back();
  loading.total.pop_back();
  loading.ui.pop_back();
  const Capture& c = *b.app.session.capture;
  const size_t lines = b.app.trace.text() ? b.app.trace.text()->line_count() : 0;
  b.trace_to_top();
  Series still{"still", {}, {}}, wheel{"wheel scrolling", {}, {}};
  b.frames(&still, n);
  wheel_trace(b, &wheel, n);
  std::printf("\nopen %s (%zu pipelines, model %s): %.0f ms from load_file to the end of the first frame that "
              "shows it; that frame %.1f ms; %zu frames drawn while loading (median %.2f ms, p95 %.2f ms)\n\n",
              path.c_str(), c.pipelines.size(), c.model.name.c_str(), open_to_first, first, loading.total.size(),
              bench::percentile(loading.total, 50), bench::percentile(loading.total, 95));
  header();
  std::string content = c.model.name + " capture, selected stage " + std::to_string(lines) + " lines";
  row("trace", content, fixed(first), still);
  row("trace", content, "", wheel);
}

}  // namespace

int run(int argc, char** argv) {
  const bench::BenchArgs args(argc, argv, {"capture", "frames", "size"});
  if (args.help) {
    std::cout << "usage: tv_bench_gui [--capture FILE.tvz.json] [--frames N] [--size WxH]\n"
                 "  frame times of the trace view (a generated 100 000-line trace), the diff view and, with\n"
                 "  --capture, a capture from asking to open it to its first frame; needs an X server (Xvfb:\n"
                 "  tests/bench/run_gui_bench.sh)\n";
    return 0;
  }
  const std::string capture = args.get("capture", ""), size = args.get("size", "1600x1000");
  const int frames = args.get_count("frames", 300);
  WindowOptions options;
  options.visible = false;
  if (std::sscanf(size.c_str(), "%dx%d", &options.width, &options.height) != 2) {
    std::cerr << "--size: expected WxH\n";
    return 2;
  }
  Window window;
  std::string error;
  auto start = Clock::now();
  if (!window.open(options, &error)) {
    std::cerr << "error: " << error << "\n";
    return 2;
  }
  const double open_ms = ms_since(start);
  std::printf("renderer: %s, OpenGL %s; Dear ImGui %s; window %s opened in %.0f ms\n\n",
              reinterpret_cast<const char*>(glGetString(GL_RENDERER)),
              reinterpret_cast<const char*>(glGetString(GL_VERSION)), ImGui::GetVersion(), size.c_str(), open_ms);
  try {
    header();
    empty_window_bench(window, options, frames);
    trace_view_bench(window, options, frames);
    interleaved_still_bench(window, options, frames);
    header();
    diff_view_bench(window, options, frames);
    if (!capture.empty()) capture_bench(window, options, capture, frames);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) { return bench::main_of("tv_bench_gui", argc, argv, run); }
