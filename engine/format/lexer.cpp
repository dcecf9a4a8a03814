#include "format/lexer.h"

#include <cctype>

namespace tv::lexer {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

// Decodes a quoted string starting at text[i]; returns false when it is not terminated.
bool read_string(std::string_view text, size_t& i, std::string& out) {
  char quote = text[i++];
  while (i < text.size()) {
    char c = text[i++];
    if (c == quote) return true;
    if (c != '\\') { out += c; continue; }
    if (i >= text.size()) return false;
    char e = text[i++];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case 'x': {
        if (i + 2 > text.size() || !std::isxdigit(static_cast<unsigned char>(text[i])) ||
            !std::isxdigit(static_cast<unsigned char>(text[i + 1])))
          return false;
        out += static_cast<char>(std::stoi(std::string(text.substr(i, 2)), nullptr, 16));
        i += 2;
        break;
      }
      default: out += e;
    }
  }
  return false;
}

}  // namespace

Tokens tokenize(std::string_view text, int first_column) {
  Tokens out;
  size_t i = 0;
  auto push = [&](Kind kind, std::string t, size_t start) {
    out.tokens.push_back({kind, std::move(t), first_column + static_cast<int>(start), first_column + static_cast<int>(i)});
  };
  while (i < text.size()) {
    char c = text[i];
    size_t start = i;
    if (c == ' ' || c == '\t') { ++i; continue; }
    if (c == '#') {
      out.comment = std::string(text.substr(i + 1));
      out.comment_column = first_column + static_cast<int>(i);
      break;
    }
    if (name_start(c)) {
      while (i < text.size() && name_char(text[i])) ++i;
      push(Kind::name, std::string(text.substr(start, i - start)), start);
    } else if (digit(c) || (c == '.' && i + 1 < text.size() && digit(text[i + 1]))) {
      while (i < text.size() && (name_char(text[i]) || text[i] == '.' ||
                                 ((text[i] == '-' || text[i] == '+') && (text[i - 1] == 'e' || text[i - 1] == 'E'))))
        ++i;
      push(Kind::number, std::string(text.substr(start, i - start)), start);
    } else if (c == '\'' || c == '"') {
      std::string s;
      if (!read_string(text, i, s)) {
        push(Kind::error, "unterminated string", start);
        return out;
      }
      push(Kind::string, std::move(s), start);
    } else if (text.substr(i, 3) == "...") {
      i += 3;
      push(Kind::op, "...", start);
    } else if (std::string_view("()[]{},:=.*-+").find(c) != std::string_view::npos) {
      ++i;
      push(Kind::op, std::string(1, c), start);
    } else {
      ++i;
      push(Kind::error, std::string("unexpected character '") + c + "'", start);
      return out;
    }
  }
  out.tokens.push_back({Kind::end, "", first_column + static_cast<int>(text.size()), first_column + static_cast<int>(text.size())});
  return out;
}

}  // namespace tv::lexer
