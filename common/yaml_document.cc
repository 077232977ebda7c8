#include "common/yaml_document.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include <yaml-cpp/eventhandler.h>

#include "common/error.h"

namespace dtsim {
namespace {

// yaml-cpp marks are 0-based; SourceLocation is 1-based.
SourceLocation At(const YAML::Mark& mark, const std::string& file) {
  if (mark.is_null() || mark.line < 0) return SourceLocation{file};
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

// Follows one document's parse events and measures it as code that walks
// the nodes sees it: every alias counts as a full copy of its node. Throws
// UserError as soon as a bound is crossed, so a billion-laughs document is
// refused after about kMaxYamlNodes events' worth of counting, not after
// its expansion.
class DocumentShape : public YAML::EventHandler {
 public:
  explicit DocumentShape(const std::string& file) : file_(file) {}

  bool has_root() const { return has_root_; }
  const YAML::Mark& root_mark() const { return root_mark_; }
  bool root_is_null() const { return root_is_null_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Leaf(mark, anchor, true);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Leaf(mark, anchor, false);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    NoteRoot(mark, false);
    for (const Open& o : open_) {
      if (o.anchor == anchor) {
        throw UserError(At(mark, file_),
                        "this alias refers to a node that contains it, so the document "
                        "never ends",
                        "an alias (*name) may only repeat a node defined (&name) outside it");
      }
    }
    // yaml-cpp rejects an alias to an undefined anchor before calling here.
    const auto it = size_of_.find(anchor);
    DTSIM_CHECK(it != size_of_.end(), "alias to an anchor that yaml-cpp did not report");
    Add(mark, it->second);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Start(mark, anchor);
  }
  void OnSequenceEnd() override { End(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Start(mark, anchor);
  }
  void OnMapEnd() override { End(); }

 private:
  // Nodes and levels of a (sub)tree with aliases expanded.
  struct Size {
    std::int64_t nodes = 0;
    int depth = 0;
  };
  struct Open {
    YAML::anchor_t anchor;
    Size size;  // so far, the node itself included
  };

  void NoteRoot(const YAML::Mark& mark, bool null) {
    if (has_root_ || !open_.empty()) return;
    has_root_ = true;
    root_mark_ = mark;
    root_is_null_ = null;
  }

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, bool null) {
    NoteRoot(mark, null);
    const Size one{1, 1};
    if (anchor != 0) size_of_[anchor] = one;
    Add(mark, one);
  }

  void Start(const YAML::Mark& mark, YAML::anchor_t anchor) {
    NoteRoot(mark, false);
    Count(mark, 1, static_cast<int>(open_.size()) + 1);
    open_.push_back(Open{anchor, Size{1, 1}});
  }

  void End() {
    DTSIM_CHECK(!open_.empty(), "unbalanced YAML events");
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != 0) size_of_[done.anchor] = done.size;
    if (!open_.empty()) Nest(done.size);
  }

  // A finished child (leaf, alias or container) of the open node.
  void Add(const YAML::Mark& mark, const Size& child) {
    Count(mark, child.nodes, static_cast<int>(open_.size()) + child.depth);
    if (!open_.empty()) Nest(child);
  }

  void Nest(const Size& child) {
    Size& parent = open_.back().size;
    parent.nodes += child.nodes;
    parent.depth = std::max(parent.depth, child.depth + 1);
  }

  // Adds `nodes` to the document's total; `depth` is the deepest level they
  // reach (the root is level 1).
  void Count(const YAML::Mark& mark, std::int64_t nodes, int depth) {
    total_nodes_ += nodes;
    if (total_nodes_ > kMaxYamlNodes) {
      throw UserError(At(mark, file_),
                      "the document has more than " + std::to_string(kMaxYamlNodes) +
                          " values when its aliases are expanded",
                      "each alias (*name) counts as a copy of the node it names; "
                      "aliases of aliases multiply");
    }
    if (depth > kMaxYamlDepth) {
      throw UserError(At(mark, file_),
                      "the document nests mappings and lists more than " +
                          std::to_string(kMaxYamlDepth) + " levels deep" +
                          (size_of_.empty() ? "" : " (aliases expanded)"),
                      "dtsim's files nest a few levels; check the brackets and indentation");
    }
  }

  const std::string& file_;
  bool has_root_ = false;
  bool root_is_null_ = false;
  YAML::Mark root_mark_;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, Size> size_of_;  // of each finished anchored node
  std::int64_t total_nodes_ = 0;
};

bool SamePlace(const YAML::Mark& a, const YAML::Mark& b) { return a.pos == b.pos; }

// The character at `mark`, quoted for a message.
std::string TokenAt(const std::string& text, const YAML::Mark& mark) {
  if (mark.pos < 0 || static_cast<std::size_t>(mark.pos) >= text.size()) return "this token";
  const char c = text[static_cast<std::size_t>(mark.pos)];
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    return "this character";
  }
  return "'" + std::string(1, c) + "'";
}

}  // namespace

YAML::Node ParseYamlDocument(const std::string& text, const std::string& filename) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentShape first(filename);
    if (!parser.HandleNextDocument(first)) return YAML::Node();  // no document: null
    DocumentShape second(filename);
    if (parser.HandleNextDocument(second)) {
      // yaml-cpp 0.7 answers a token that cannot start a value with an empty
      // document that leaves the token in place (see the header): the next
      // document then starts at the same place. A real second document
      // ('---') starts further on.
      DocumentShape third(filename);
      const bool stuck =
          second.root_is_null() &&
          ((first.has_root() && SamePlace(first.root_mark(), second.root_mark())) ||
           (parser.HandleNextDocument(third) && third.has_root() &&
            SamePlace(third.root_mark(), second.root_mark())));
      if (stuck) {
        throw UserError(At(second.root_mark(), filename),
                        "malformed YAML: " + TokenAt(text, second.root_mark()) +
                            " cannot start a value here",
                        "a file holds one mapping of 'key: value' lines; check for a stray "
                        "',', ']' or '}'");
      }
      throw UserError(At(second.root_mark(), filename),
                      "a second YAML document ('---') is not allowed: the file must hold one "
                      "document");
    }
  } catch (const YAML::Exception& e) {
    throw UserError(At(e.mark, filename), "malformed YAML: " + e.msg,
                    "check the indentation and the ':' after each key near this position");
  }
  // The events above are those of the first document and end; YAML::Load
  // reads only that document.
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(At(e.mark, filename), "malformed YAML: " + e.msg,
                    "check the indentation and the ':' after each key near this position");
  }
}

}  // namespace dtsim
