// Escaping for the HTML report and the JUnit XML.
#pragma once
#include <string>
#include <string_view>

namespace tv::cli {

// & < > " ' as entities; control characters other than tab and newline dropped (not valid XML 1.0).
inline std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\n' || ch == '\t') out += ch;
    }
  }
  return out;
}

}  // namespace tv::cli
