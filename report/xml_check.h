// For tests: a minimal XML well-formedness check of the SVG that
// svg_plot.h writes. It checks one root element, matching start and end
// tags, quoted attributes without '<', and that every '&' starts an entity;
// it skips comments, processing instructions and DOCTYPE. Not a validator.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace dtsim::report {

namespace xml_check_internal {

inline bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' ||
         c == '.';
}

// "" when every '&' in text[begin, end) starts an entity.
inline std::string CheckEntities(const std::string& text, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    if (text[i] != '&') continue;
    const std::size_t semi = text.find(';', i);
    if (semi == std::string::npos || semi >= end || semi == i + 1) {
      return "bare '&' at " + std::to_string(i);
    }
    for (std::size_t k = i + 1; k < semi; ++k) {
      if (!IsNameChar(text[k]) && text[k] != '#') return "bad entity at " + std::to_string(i);
    }
  }
  return "";
}

}  // namespace xml_check_internal

// "" when `xml` is well-formed in the sense above, else what is wrong.
inline std::string CheckXml(const std::string& xml) {
  using namespace xml_check_internal;
  std::vector<std::string> open;
  int roots = 0;
  std::size_t i = 0;
  while (i < xml.size()) {
    const std::size_t lt = xml.find('<', i);
    const std::size_t text_end = lt == std::string::npos ? xml.size() : lt;
    if (std::string e = CheckEntities(xml, i, text_end); !e.empty()) return e;
    if (open.empty()) {
      for (std::size_t k = i; k < text_end; ++k) {
        if (!std::isspace(static_cast<unsigned char>(xml[k]))) {
          return "text outside the root at " + std::to_string(k);
        }
      }
    }
    if (lt == std::string::npos) break;
    i = lt;
    auto skip_to = [&](const char* end) -> bool {
      const std::size_t at = xml.find(end, i);
      if (at == std::string::npos) return false;
      i = at + std::string(end).size();
      return true;
    };
    if (xml.compare(i, 4, "<!--") == 0) {
      if (!skip_to("-->")) return "unclosed comment";
      continue;
    }
    if (xml.compare(i, 2, "<?") == 0 || xml.compare(i, 2, "<!") == 0) {
      if (!skip_to(">")) return "unclosed declaration";
      continue;
    }
    const bool closing = xml.compare(i, 2, "</") == 0;
    i += closing ? 2 : 1;
    const std::size_t name_start = i;
    while (i < xml.size() && IsNameChar(xml[i])) ++i;
    const std::string name = xml.substr(name_start, i - name_start);
    if (name.empty()) return "tag without name at " + std::to_string(name_start);
    if (closing) {
      while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i]))) ++i;
      if (i >= xml.size() || xml[i] != '>') return "bad end tag </" + name;
      ++i;
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      }
      open.pop_back();
      continue;
    }
    // Attributes, then '>' or '/>'.
    bool self_closing = false;
    while (true) {
      while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i]))) ++i;
      if (i >= xml.size()) return "unclosed tag <" + name;
      if (xml[i] == '>') {
        ++i;
        break;
      }
      if (xml.compare(i, 2, "/>") == 0) {
        i += 2;
        self_closing = true;
        break;
      }
      const std::size_t attr_start = i;
      while (i < xml.size() && IsNameChar(xml[i])) ++i;
      if (i == attr_start) return "bad attribute in <" + name;
      if (i >= xml.size() || xml[i] != '=') return "attribute without value in <" + name;
      ++i;
      if (i >= xml.size() || (xml[i] != '"' && xml[i] != '\'')) {
        return "unquoted attribute in <" + name;
      }
      const char quote = xml[i++];
      const std::size_t value_end = xml.find(quote, i);
      if (value_end == std::string::npos) return "unclosed attribute in <" + name;
      if (xml.find('<', i) < value_end) return "'<' in an attribute of <" + name;
      if (std::string e = CheckEntities(xml, i, value_end); !e.empty()) return e;
      i = value_end + 1;
    }
    if (open.empty() && ++roots > 1) return "a second root element <" + name + ">";
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> is not closed";
  if (roots == 0) return "no element";
  return "";
}

}  // namespace dtsim::report
