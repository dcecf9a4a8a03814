// The guided tour of the seed story, in five steps: each step is a short text and a button that
// puts the relevant panel and pipeline in front.
#pragma once

namespace tv::gui {

class App;

struct Tour {
  bool open = false;
  int step = 0;
  void draw(App& app);
};

}  // namespace tv::gui
