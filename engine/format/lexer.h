// Lexer for one statement of a trace: Python tokens with their 1-based columns.
// Contract: tokenize never throws; a bad character or an unterminated string is reported as an
// error token carrying its column. A '#' outside a string ends the statement: the rest of the line
// is returned as the trailing comment.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tv::lexer {

enum class Kind { name, number, string, op, end, error };

struct Token {
  Kind kind = Kind::end;
  std::string text;  // the name, the number's spelling, the string's decoded contents, the operator
  int column = 0;    // 1-based, in the whole line
  int end_column = 0;
};

struct Tokens {
  std::vector<Token> tokens;  // always ends with an `end` or `error` token
  std::string comment;        // text after '#', without the '#'
  int comment_column = 0;     // 0 when there is no comment
};

// `first_column` is the column of text[0] in the line.
Tokens tokenize(std::string_view text, int first_column);

}  // namespace tv::lexer
