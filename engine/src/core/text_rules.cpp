#include "core/text_rules.hpp"

#include <algorithm>

namespace prescient::core {

namespace {

// The length of the UTF-8 sequence that starts at text[i], or 0 when none valid does.
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  std::size_t length = 0;
  char32_t code = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) length = 2, code = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) length = 3, code = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) length = 4, code = c & 0x07;
  else return 0;
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    code = (code << 6) | (next & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and code points beyond Unicode are not UTF-8.
  static constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return length;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER

}  // namespace

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = sequence_length(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string storable_text(std::string_view text, std::size_t max_bytes) {
  // The common case, on the hot path (every event's type): nothing to replace, nothing to cut.
  if (text.size() <= max_bytes && text.find('\0') == std::string_view::npos && valid_utf8(text)) {
    return std::string(text);
  }
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  std::size_t i = 0;
  while (i < text.size() && out.size() <= max_bytes) {
    const std::size_t length = sequence_length(text, i);
    if (length == 0 || text[i] == '\0') {
      out += kReplacement;
      ++i;  // one replacement per byte that is not valid: how much was wrong stays visible
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  if (i == text.size() && out.size() <= max_bytes) return out;
  const std::string marker = "\xE2\x80\xA6[cut: " + std::to_string(text.size()) + " bytes in all]";
  out.resize(max_bytes - marker.size());
  // The output was valid UTF-8 before the cut: drop the character the cut fell into, if it did.
  std::size_t last = out.size();
  while (last > 0 && (static_cast<unsigned char>(out[last - 1]) & 0xC0) == 0x80) --last;
  if (last > 0 && sequence_length(out, last - 1) != out.size() - (last - 1)) out.resize(last - 1);
  return out + marker;
}

std::optional<std::string> text_problem(std::string_view what, std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return std::string(what) + " contains a NUL byte";
  if (!valid_utf8(value)) return std::string(what) + " is not valid UTF-8";
  return std::nullopt;
}

std::optional<std::string> name_problem(std::string_view what, std::string_view value) {
  if (auto problem = text_problem(what, value)) return problem;
  if (value.size() > kMaxNameBytes) {
    return std::string(what) + " is " + std::to_string(value.size()) + " bytes long (at most " +
           std::to_string(kMaxNameBytes) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> payload_text_problem(const nlohmann::json& payload) {
  if (payload.is_string()) return text_problem("a string of the payload", payload.get_ref<const std::string&>());
  if (payload.is_object()) {
    for (const auto& [key, value] : payload.items()) {
      if (auto problem = text_problem("a key of the payload", key)) return problem;
      if (auto problem = payload_text_problem(value)) return problem;
    }
  } else if (payload.is_array()) {
    for (const auto& value : payload) {
      if (auto problem = payload_text_problem(value)) return problem;
    }
  }
  return std::nullopt;
}

nlohmann::json readable_payload(const std::string& stored) {
  try {
    return nlohmann::json::parse(stored);
  } catch (const nlohmann::json::exception&) {
    return stored;
  }
}

std::string one_line(std::string_view message) {
  std::string out;
  bool pending_break = false;
  for (const char c : message) {
    if (c == '\n' || c == '\r' || c == '\t') {
      pending_break = !out.empty();
      continue;
    }
    if (pending_break) {
      out += "; ";
      pending_break = false;
    }
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

}  // namespace prescient::core
