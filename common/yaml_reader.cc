#include "common/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>

namespace dtsim {
namespace {

// yaml-cpp marks are 0-based; SourceLocation is 1-based.
SourceLocation ToLocation(const YAML::Mark& mark, const std::string& file,
                          const SourceLocation& fallback) {
  if (mark.is_null() || mark.line < 0) {
    return fallback.file.empty() ? SourceLocation{file} : fallback;
  }
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

std::string ChildPath(const std::string& parent, std::string_view child) {
  return parent.empty() ? std::string(child) : parent + "." + std::string(child);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Levenshtein distance, case-insensitive.
std::size_t EditDistance(std::string_view a_in, std::string_view b_in) {
  const std::string a = Lower(a_in), b = Lower(b_in);
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string Join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

std::string ExpectedMapping(const YamlValue& value) {
  return "expected a mapping of 'key: value' lines, got " + value.Describe();
}

std::string MissingKey(std::string_view key, std::string_view expected) {
  std::string message = "missing required key '" + std::string(key) + "'";
  if (!expected.empty()) message += " (" + std::string(expected) + ")";
  return message;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && Lower(a) == Lower(b);
}

std::string UnknownNameHint(std::string_view name, const std::vector<std::string>& known,
                            std::string_view what) {
  // Suggest the closest name, comparing both with whole names and with their
  // beginnings ("V100-SXM3" is 1 edit from the start of "V100-SXM2-32GB"),
  // if within a third of the typed length (at least 2 edits); else a name
  // that contains what was typed ("SXM4-80" -> "A100-SXM4-80GB").
  const std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
  const std::string* best = nullptr;
  std::pair<std::size_t, std::size_t> best_score{limit + 1, 0};  // (closest, whole name)
  for (const std::string& k : known) {
    const std::size_t whole = EditDistance(name, k);
    const std::size_t start =
        name.size() >= 3 ? EditDistance(name, std::string_view(k).substr(0, name.size())) : whole;
    const std::pair<std::size_t, std::size_t> score{std::min(whole, start), whole};
    if (score < best_score) {
      best = &k;
      best_score = score;
    }
  }
  if (best == nullptr && name.size() >= 3) {
    for (const std::string& k : known) {
      if (Lower(k).find(Lower(name)) != std::string::npos) {
        best = &k;
        break;
      }
    }
  }
  std::string hint;
  if (best != nullptr) hint = "did you mean '" + *best + "'? ";
  return hint + std::string(what) + ": " + Join(known);
}

YamlValue::YamlValue(YAML::Node node, std::string file, std::string path, SourceLocation fallback)
    : node_(std::move(node)),
      file_(std::move(file)),
      path_(std::move(path)),
      // yaml-cpp places an empty value at the next token, often on a later
      // line; the key's position is where the user looks.
      where_(node_.IsNull() && fallback.line > 0 ? fallback
                                                  : ToLocation(node_.Mark(), file_, fallback)) {}

YamlValue YamlValue::Root(YAML::Node node, std::string file) {
  SourceLocation start{file, 1, 1};
  return YamlValue(std::move(node), std::move(file), "", std::move(start));
}

void YamlValue::Fail(const std::string& message, const std::string& hint) const {
  throw UserError(where_, path_.empty() ? message : path_ + ": " + message, hint);
}

void YamlValue::FailInfeasible(const std::string& message, const std::string& hint) const {
  throw InfeasiblePlan(where_, path_.empty() ? message : path_ + ": " + message, hint);
}

std::string YamlValue::Describe() const {
  if (!node_.IsDefined() || node_.IsNull()) return "nothing";
  if (node_.IsMap()) return "a mapping";
  if (node_.IsSequence()) return "a list";
  return "'" + node_.Scalar() + "'";
}

std::string YamlValue::AsString() const {
  if (!node_.IsScalar()) Fail("expected a single value, got " + Describe());
  if (node_.Scalar().empty()) Fail("expected a non-empty value");
  return node_.Scalar();
}

std::int64_t YamlValue::AsInt64(std::int64_t min, std::int64_t max) const {
  if (!node_.IsScalar()) Fail("expected an integer, got " + Describe());
  const std::string& s = node_.Scalar();
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) Fail("the integer '" + s + "' is too large");
  if (ec != std::errc() || end != s.data() + s.size()) {
    Fail("expected an integer, got " + Describe(), "write a whole number without a unit, e.g. 4");
  }
  if (v < min) Fail("expected an integer >= " + std::to_string(min) + ", got " + s);
  if (v > max) Fail("expected an integer <= " + std::to_string(max) + ", got " + s);
  return v;
}

int YamlValue::AsInt(int min) const { return static_cast<int>(AsInt64(min, INT_MAX)); }

double YamlValue::AsNumber() const {
  if (!node_.IsScalar()) Fail("expected a number, got " + Describe());
  const std::string& s = node_.Scalar();
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    Fail("expected a number, got " + Describe(), "write a plain number without a unit, e.g. 0.8");
  }
  return v;
}

bool YamlValue::AsBool() const {
  if (node_.IsScalar()) {
    const std::string s = Lower(node_.Scalar());
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  Fail("expected true or false, got " + Describe());
}

QuantityBounds BoundsOf(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return {1.0, 1152921504606846976.0};  // 2^60
    case Dimension::kBandwidth: return {125.0, 1e15};
    case Dimension::kTime: return {0.0, 1e6};
    case Dimension::kFlopRate: return {1e6, 1e21};
  }
  DTSIM_CHECK(false, "unhandled Dimension");
  return {0, 0};
}

namespace {

// `value` in the base unit of `dim`, for a person.
std::string FormatQuantity(double value, Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return FormatBytes(value);
    case Dimension::kBandwidth: return FormatBandwidth(value);
    case Dimension::kTime: return FormatSeconds(value);
    case Dimension::kFlopRate: return FormatFlopRate(value);
  }
  return std::to_string(value);
}

}  // namespace

double YamlValue::AsQuantity(Dimension dim, double highest) const {
  if (!node_.IsScalar()) {
    Fail(std::string("expected a ") + DimensionName(dim) + " with a unit, got " + Describe());
  }
  double v = 0;
  try {
    v = ParseQuantity(node_.Scalar(), dim, where_);
  } catch (const UserError& e) {
    Fail(e.message(), e.hint());
  }
  const QuantityBounds bounds = BoundsOf(dim);
  if (highest <= 0) highest = bounds.highest;
  // Also catches a number that overflowed to inf when scaled to the base
  // unit (1e308TBps).
  if (!(v <= highest)) {
    Fail(std::string("the ") + DimensionName(dim) + " " + Describe() + " is more than " +
             FormatQuantity(highest, dim) + ", the most dtsim accepts",
         "check the number and its unit");
  }
  if (v != 0 && v < bounds.lowest) {
    Fail(std::string("the ") + DimensionName(dim) + " " + Describe() + " is less than " +
             FormatQuantity(bounds.lowest, dim) + ", the least dtsim accepts (0 aside)",
         "check the number and its unit");
  }
  return v;
}

double YamlValue::AsPositiveQuantity(Dimension dim, double highest) const {
  const double v = AsQuantity(dim, highest);
  if (v <= 0) Fail(std::string("expected a ") + DimensionName(dim) + " > 0, got " + Describe());
  return v;
}

std::size_t YamlValue::AsChoice(const std::vector<std::string>& names,
                                std::string_view what) const {
  const std::string s = AsString();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (EqualsIgnoreCase(s, names[i])) return i;
  }
  Fail("unknown " + std::string(what) + " '" + s + "'",
       UnknownNameHint(s, names, "accepted values"));
}

std::pair<int, int> YamlValue::AsIntPair(int min) const {
  if (IsScalar()) {
    const int v = AsInt(min);
    return {v, v};
  }
  if (!IsSequence() || node_.size() != 2) {
    Fail("expected an integer or a list of two integers, got " + Describe(),
         "write 3 for 3 and 3, or [3, 5]");
  }
  const std::vector<YamlValue> items = AsSequence();
  return {items[0].AsInt(min), items[1].AsInt(min)};
}

std::vector<std::int64_t> YamlValue::AsInt64List(std::int64_t min, std::int64_t max) const {
  if (!IsSequence() || node_.size() == 0) {
    Fail("expected a non-empty list of integers, got " + Describe(), "e.g. [3, 224, 224]");
  }
  std::vector<std::int64_t> out;
  for (const YamlValue& item : AsSequence()) out.push_back(item.AsInt64(min, max));
  return out;
}

std::vector<YamlValue> YamlValue::AsSequence() const {
  if (!node_.IsSequence()) Fail("expected a list, got " + Describe());
  std::vector<YamlValue> out;
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.emplace_back(node_[i], file_, path_ + "[" + std::to_string(i) + "]", where_);
  }
  return out;
}

YamlMap YamlValue::AsMap(std::vector<std::string> allowed_keys) const {
  return YamlMap(*this, std::move(allowed_keys));
}

YamlValue YamlValue::RequireSelector(std::string_view key, std::string_view expected) const {
  if (!IsMap()) Fail(ExpectedMapping(*this));
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) {
      const YamlValue key_value(it->first, file_, path_, where_);
      return YamlValue(it->second, file_, ChildPath(path_, key), key_value.where());
    }
  }
  Fail(MissingKey(key, expected));
}

YamlMap::YamlMap(const YamlValue& value, std::vector<std::string> allowed_keys)
    : self_(value), allowed_(std::move(allowed_keys)) {
  if (!value.IsMap()) {
    value.Fail(ExpectedMapping(value), "allowed keys: " + Join(allowed_));
  }
  const std::string& file = value.where().file;
  for (auto it = value.node().begin(); it != value.node().end(); ++it) {
    YamlValue key(it->first, file, value.path(), value.where());
    if (!it->first.IsScalar()) key.Fail("expected a key name, got " + key.Describe());
    const std::string name = it->first.Scalar();
    const std::string path = ChildPath(value.path(), name);
    if (std::find(allowed_.begin(), allowed_.end(), name) == allowed_.end()) {
      const std::string in = value.path().empty() ? " at top level" : " in '" + value.path() + "'";
      throw UserError(key.where(), "unknown key '" + name + "'" + in,
                      UnknownNameHint(name, allowed_, "allowed keys"));
    }
    for (const Entry& e : entries_) {
      if (e.key == name) {
        throw UserError(key.where(), "duplicate key '" + path + "' (first given at line " +
                                         std::to_string(e.key_value.where().line) + ")");
      }
    }
    YamlValue val(it->second, file, path, key.where());
    entries_.push_back(Entry{name, std::move(key), std::move(val)});
  }
}

std::optional<YamlValue> YamlMap::Get(std::string_view key) const {
  DTSIM_CHECK(std::find(allowed_.begin(), allowed_.end(), key) != allowed_.end(),
              "key '" + std::string(key) + "' is read but not declared allowed");
  for (const Entry& e : entries_) {
    if (e.key == key) return e.value;
  }
  return std::nullopt;
}

YamlValue YamlMap::Require(std::string_view key, std::string_view expected) const {
  std::optional<YamlValue> v = Get(key);
  if (!v) self_.Fail(MissingKey(key, expected));
  return *v;
}

}  // namespace dtsim
