// Rules panel: the capture's composition-rules matrix, each cell coloured and labelled with its
// verdict in text; clicking a cell opens both orders in the diff view (running them live when the
// capture does not hold them and the model is built in); the rule's explanation beside it.
#pragma once
#include <string>
#include <vector>

#include "gui/session.h"

namespace tv::gui {

struct RulesPanel {
  std::vector<std::string> selected;  // order of the selected cell
  bool pending_open = false;          // a live run for a clicked cell is on its way

  void draw(Session& s);
  // Opens `order` and its reverse in the diff view (what a click on a cell does).
  void open_cell(Session& s, const std::vector<std::string>& order);
  // After a run: show the two pipelines it made in the diff view.
  void on_new_capture(Session& s);

 private:
  void draw_matrix(Session& s, const RulesMatrix& m);
  void draw_detail(const RulesMatrix& m) const;
};

// Index of the pipeline whose order is `order` (any world size), -1 when absent.
int find_pipeline(const Capture& c, const std::vector<std::string>& order);
// Diff of the last stages of two pipelines: backward when both have one, else forward.
void open_pipelines_in_diff(Session& s, int left, int right);

}  // namespace tv::gui
