#include "ir/name_table.h"

namespace tv {

int64_t default_name_number(std::string_view name) {
  constexpr size_t kMaxDigits = 7;  // ten million names: a table by number stays an array
  if (name.size() < 2 || name.size() > 1 + kMaxDigits || name[0] != 't') return -1;
  if (name[1] == '0' && name.size() > 2) return -1;
  int64_t n = 0;
  for (char c : name.substr(1)) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace tv
