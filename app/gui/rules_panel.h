// Rules panel: the capture's composition-rules matrix, each cell coloured and labelled with its
// verdict in text, then the longer orders and the cells other semantics modes change as a list; clicking a cell
// opens both of its orders in the diff view (running them live when the capture does not hold
// them and the model is built in); the selected cell's rule and its explanation beside it.
// Contract: `drawn` lists what the last frame showed, cell by cell, for the state dump.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "gui/session.h"

namespace tv::gui {

// One cell as the last frame drew it.
struct DrawnCell {
  std::vector<std::string> order;
  std::string semantics = "lazy";
  std::string verdict;               // composition_name of the cell
  std::string label;                 // the text on the cell
  std::array<float, 4> colour{};     // RGBA of the verdict colour it was drawn in
  bool selected = false;
};

struct RulesPanel {
  std::vector<std::string> selected;  // order of the selected cell
  std::string selected_semantics = "lazy";
  bool pending_open = false;          // a live run for a clicked cell is on its way
  std::vector<DrawnCell> drawn;       // the cells of the last frame
  std::string shown_rule;             // the rule whose explanation the detail showed last frame

  void draw(Session& s);
  // What a click on a cell does: opens the cell's order and the order it was compared with in the
  // diff view, from the capture when it holds both pipelines, else by running them live.
  void open_cell(Session& s, const RuleCell& cell);
  // The cell of `order` in the capture's matrix (or `order` against its reverse when the matrix
  // has no such cell), opened as by a click.
  void open_order(Session& s, const std::vector<std::string>& order, const std::string& semantics = "lazy");
  // After a run: show the two pipelines it made in the diff view.
  void on_new_capture(Session& s);

 private:
  void draw_matrix(Session& s, const RulesMatrix& m);
  void draw_detail(const Session& s, const RulesMatrix& m);
  bool is_selected(const RuleCell& cell) const;
};

// Index of the pipeline whose order is `order` in this semantics mode (any world size), -1 when absent.
int find_pipeline(const Capture& c, const std::vector<std::string>& order, const std::string& semantics = "lazy");
// Diff of the last stages of two pipelines: backward when both have one, else forward.
void open_pipelines_in_diff(Session& s, int left, int right);

}  // namespace tv::gui
