// Transform order panel: the transforms as a list you reorder by drag and drop (or the arrow
// buttons), add to and remove from; world size, device, semantics mode and workaround; "Run" re-runs the
// engine with the previous order and the new one on the worker thread and shows both results
// with the verdict from the capture's comparisons, or the error and rule of an illegal order.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/session.h"

namespace tv::gui {

struct OrderPanel {
  std::vector<std::string> order{"jit"};
  int world_size = 1;
  std::string device = "cpu";
  std::string semantics = "lazy";
  std::string workaround;  // "" or "process-group" (thunder-2024-03)
  std::optional<PipelineSpec> previous;  // the order of the last run: compared with the new one
  bool initialised = false;

  // Actions (buttons, drag and drop, scripts).
  void move(int from, int to);
  void add(const std::string& transform);
  void remove(int index);
  PipelineSpec spec() const;
  // Starts a run of {previous, new}; false (and s.error set) when the capture cannot be re-run.
  bool run(Session& s);
  void set_order(const std::vector<std::string>& transforms);

  void draw(Session& s);
  // Takes order, world size and device from the first capture's first pipeline (once).
  void initialise(const Session& s);

 private:
  void draw_list(UiTargets& targets);
  void draw_results(Session& s);
  void draw_semantics();
};

// How to re-run what the session shows (Session::rerun): none when it cannot be.
std::optional<RunRequest> rerun_request(const Session& s);

}  // namespace tv::gui
