// JSON nesting limit and bounded excerpts (see json_guard.h).
#include "tandem/io/json_guard.h"

namespace tandem::io {

size_t json_depth_violation(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;  // unbalanced closers are the parser's to report
    }
  }
  return std::string::npos;
}

std::string excerpt(std::string_view text, size_t max_chars) {
  const char* digits = "0123456789abcdef";
  std::string out = "\"";
  const size_t n = text.size() < max_chars ? text.size() : max_chars;
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  out += '"';
  if (n < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string clip(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  return std::string(text.substr(0, max_chars)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace tandem::io
