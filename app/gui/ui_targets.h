// UI targets: where named widgets were drawn in the last frame, so the scripted driver can put a
// real (synthetic) mouse on them and click or drag through ImGui's own hit-testing.
// Contract: recording is off unless a script turns it on (the interactive window pays nothing).
// Panels mark an item right after drawing it, under a path-like name: "rules/cell/jit,ddp",
// "order/item/1", "trace/proxy/t0", "replay/slowest/0". The first mark of a name in a frame wins;
// `clear` is called at the start of every frame, so `find` between frames answers for the frame
// just drawn. A mark keeps only the part of the item inside the window's clip rect (none: no mark).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tv::gui {

struct TargetRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // screen pixels, top left to bottom right
  float centre_x() const { return (x0 + x1) / 2; }
  float centre_y() const { return (y0 + y1) / 2; }
};

class UiTargets {
 public:
  bool enabled = false;

  void clear() { rects_.clear(); }
  void mark(const std::string& name, const TargetRect& rect);
  // The rect of ImGui's last item (call right after drawing it).
  void mark_last_item(const std::string& name);
  std::optional<TargetRect> find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, TargetRect> rects_;
};

}  // namespace tv::gui
