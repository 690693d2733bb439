#pragma once
// Guards for reading JSON and quoting text from untrusted files (safetensors headers,
// checkpoint metadata): a nesting limit checked before parsing, and short bounded
// excerpts for error messages.
//
// Why: JSON libraries parse nesting iteratively but print, compare and copy values
// recursively, so a header of 100,000 nested '[' parses and then overflows the stack the
// moment an error message prints it. And a message that quotes a 100 MB string is no
// help either. So every reader checks the depth first (reject with the offset), and every
// message quotes at most a few dozen characters.
#include <cstddef>
#include <string>
#include <string_view>

namespace tandem::io {

/// Deepest nesting of arrays/objects that tandem's JSON readers accept (a safetensors
/// header needs 3; the optimizer and history metadata need 2 or 3).
inline constexpr int kJsonMaxDepth = 64;

/// Scans JSON `text` (without parsing it) and returns the byte offset of the first '[' or
/// '{' that opens level max_depth + 1, or std::string::npos when nothing nests that deep.
/// Brackets inside strings (with backslash escapes) do not count. Linear time, no
/// recursion, never throws; malformed JSON is left to the parser.
size_t json_depth_violation(std::string_view text, int max_depth = kJsonMaxDepth);

/// A short, printable quotation of `text` for error messages: at most max_chars
/// characters of it in double quotes, bytes outside printable ASCII written as \xNN,
/// followed by "... (N bytes)" when it was cut. Never longer than about 4 * max_chars + 30.
std::string excerpt(std::string_view text, size_t max_chars = 48);

/// `text` (a message from a library, say) cut to at most max_chars characters, with
/// "... (N bytes)" appended when cut. Not quoted or escaped.
std::string clip(std::string_view text, size_t max_chars = 200);

}  // namespace tandem::io
