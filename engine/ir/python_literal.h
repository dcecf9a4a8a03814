// Python spellings of literals, as Python's repr() writes them.
// Contract: python_float_repr matches repr(float) (shortest round-trip digits, ".0" on integral
// values, exponent outside [1e-4, 1e16)); python_string_repr matches repr(str) for ASCII text.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace tv {

std::string python_float_repr(double);
std::string python_string_repr(std::string_view);
// Parses an int or float literal ("5", "-2", "25.0", "1e-05", "True", "False", "inf", "nan", "NaN").
std::optional<double> parse_python_number(std::string_view);

}  // namespace tv
