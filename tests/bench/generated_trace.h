// The long trace the GUI and printing benchmarks share, as Thunder prints it: a chain of
// `statements` element-wise `ltorch` calls, one line each. When `annotated`, each has its prims
// subsymbol as a comment line and every 8th a source-location comment (2.25 lines a statement).
// `variant` changes every 100th op, adds a statement every 500th and drops every 700th (the other
// side of a diff).
#pragma once
#include <sstream>
#include <string>

namespace tv::bench {

inline std::string generated_trace_text(int statements, bool annotated, bool variant = false) {
  static const char* kOps[] = {"add", "mul", "sub", "div", "maximum"};
  std::ostringstream out;
  out << "import thunder\nimport thunder.torch as ltorch\nimport torch\n\n@torch.no_grad()\n"
      << "def computation(x, w):\n  # x: \"cpu f32[64, 256]\"\n  # w: \"cpu f32[64, 256]\"\n";
  std::string prev = "x";
  const char* type = "\"cpu f32[64, 256]\"";
  for (int i = 0; i < statements; ++i) {
    if (variant && i % 700 == 699) continue;
    std::string op = kOps[i % 5];
    if (variant && i % 100 == 37) op = "atan2";
    std::string name = "t" + std::to_string(i);
    if (annotated && i % 8 == 0) out << "\n  # model.py:" << 100 + i % 900 << ": \t    h = torch." << op << "(h, w)\n";
    out << "  " << name << " = ltorch." << op << "(" << prev << ", w)  # " << name << ": " << type << "\n";
    if (annotated)
      out << "    # " << name << " = prims." << op << "(" << prev << ", w)  # " << name << ": " << type << "\n";
    if (variant && i % 500 == 250) {
      std::string extra = name + "_b";
      out << "  " << extra << " = ltorch.neg(" << name << ")  # " << extra << ": " << type << "\n";
    }
    prev = name;
  }
  out << "  return " << prev << "\n";
  return out.str();
}

}  // namespace tv::bench
