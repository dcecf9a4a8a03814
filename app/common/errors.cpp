#include "common/errors.h"

#include <cstdio>
#include <iostream>

namespace tv::app {

std::string printable_error(const std::string& what) {
  std::string text = what;
  if (auto at = text.find("Exception raised from "); at != std::string::npos) text.erase(at);
  if (auto at = text.find("\nframe #0: "); at != std::string::npos) text.erase(at);  // LibTorch 1.13's
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int report_error(const std::string& what, int code) {
  std::cerr << "error: " << printable_error(what) << "\n";
  return code;
}

}  // namespace tv::app
