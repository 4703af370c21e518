// The rich text of a lesson step: the HTML subset p, b, i, em, strong, sub, sup, code, br, ul, ol,
// li, checked in one pass that reports at most 16 problems, each with its byte position.
#include <algorithm>

#include "lesson/rich_text.h"
#include "lesson/types.h"
#include "lesson_detail.h"

namespace tensorscope::spec {
namespace {

using lesson_detail::kTagList;
using lesson_detail::preview;

bool isInlineTag(std::string_view t) {
  return t == "b" || t == "i" || t == "em" || t == "strong" || t == "sub" || t == "sup" || t == "code";
}
bool isKnownTag(std::string_view t) {
  return isInlineTag(t) || t == "p" || t == "br" || t == "ul" || t == "ol" || t == "li";
}

/// Why `tag` may not open inside `parent` ("" = top level), or "" when it may.
/// "<tag>", built by appending: GCC 12 warns falsely (-Wrestrict) on "<" + std::string(tag) + ">".
std::string bracketed(std::string_view tag) {
  std::string s = "<";
  s.append(tag).append(">");
  return s;
}

std::string nestingProblem(std::string_view tag, std::string_view parent) {
  const std::string where = parent.empty() ? std::string("at the top level") : "inside " + bracketed(parent);
  if (tag == "li") return parent == "ul" || parent == "ol" ? "" : "<li> " + where + "; a list item belongs in <ul> or <ol>";
  if (parent == "ul" || parent == "ol")
    return bracketed(tag) + " directly inside " + bracketed(parent) + "; a list holds only <li> items";
  if (tag == "p" || tag == "ul" || tag == "ol") {
    if (parent.empty() || parent == "li") return "";
    return bracketed(tag) + " " + where + "; paragraphs and lists go at the top level or in <li>";
  }
  return "";  // inline tags and br: anywhere but directly in a list
}

/// One pass over a text: the tags open at the current position and the problems found so far.
class RichTextScanner {
 public:
  RichTextScanner(std::string_view t, std::vector<std::string>& out) : t_(t), out_(out) {}

  void run() {
    if (t_.size() > kMaxLessonTextBytes) {
      add("is " + std::to_string(t_.size()) + " bytes; at most " + std::to_string(kMaxLessonTextBytes));
      return;
    }
    if (t_.find_first_not_of(" \t\n") == std::string_view::npos) {
      add("is empty; write what the learner should read");
      return;
    }
    size_t i = 0;
    while (i < t_.size()) {
      const unsigned char c = static_cast<unsigned char>(t_[i]);
      const std::string at = " at byte " + std::to_string(i);
      if (c == '<') {
        i = tag(i, at);
        continue;
      }
      if (c == '&') {
        i = entity(i, at);
        textInList(at);
        continue;
      }
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
        add("control character " + std::to_string(c) + at + "; only line breaks and tabs");
        ++i;
        continue;
      }
      if (c != ' ' && c != '\n' && c != '\t') textInList(at);
      ++i;
    }
    for (const auto& o : open_) add("<" + o + "> is never closed");
  }

 private:
  static constexpr size_t kMaxProblems = 16;

  void add(std::string m) {
    if (out_.size() < kMaxProblems) out_.push_back(std::move(m));
  }

  /// Text directly inside <ul> or <ol>: reported once per text.
  void textInList(const std::string& at) {
    if (!open_.empty() && (open_.back() == "ul" || open_.back() == "ol") && !reportedListText_) {
      add("text" + at + " directly inside <" + open_.back() + ">; put it in an <li>");
      reportedListText_ = true;
    }
  }

  /// The tag starting with the '<' at `i`; returns the position after it.
  size_t tag(size_t i, const std::string& at) {
    // Tags are short: look for the '>' within kMaxTagBytes (keeps a text of many '<' linear).
    constexpr size_t kMaxTagBytes = 64;
    const std::string_view window = t_.substr(i, kMaxTagBytes);
    const size_t closeAt = window.find('>');
    const size_t nextAt = window.find('<', 1);
    const size_t close = closeAt == std::string_view::npos ? std::string_view::npos : i + closeAt;
    if (close == std::string_view::npos || (nextAt != std::string_view::npos && nextAt < closeAt)) {
      add("'<'" + at + " starts no tag; write &lt; for a less-than sign");
      return i + 1;
    }
    std::string_view body = t_.substr(i + 1, close - i - 1);
    const std::string shown = preview(t_.substr(i, std::min<size_t>(close - i + 1, 40)));
    const bool closing = !body.empty() && body.front() == '/';
    if (closing) body.remove_prefix(1);
    bool selfClosing = false;
    if (!body.empty() && body.back() == '/') {
      selfClosing = true;
      body.remove_suffix(1);
    }
    while (!body.empty() && body.back() == ' ') body.remove_suffix(1);
    const size_t nameEnd = body.find_first_of(" \t\n");
    const std::string name(body.substr(0, nameEnd));
    const size_t next = close + 1;
    if (!isKnownTag(name)) {
      add("unknown tag " + shown + at + " (allowed: " + kTagList + ", lower case, no attributes)");
      return next;
    }
    if (nameEnd != std::string_view::npos) {
      add("tag " + shown + at + " has attributes; tags take none");
      return next;
    }
    const std::string parent = open_.empty() ? "" : open_.back();
    if (name == "br") {
      if (closing) add("</br>" + at + " is not a tag; write <br>");
      else if (const auto p = nestingProblem(name, parent); !p.empty()) add(p + at);
      return next;
    }
    if (selfClosing) {
      add(shown + at + ": only <br/> closes itself; write <" + name + ">…</" + name + ">");
      return next;
    }
    if (closing) closeTag(name, at);
    else openTag(name, parent, at);
    return next;
  }

  void closeTag(const std::string& name, const std::string& at) {
    const auto it = std::find(open_.rbegin(), open_.rend(), name);
    if (it == open_.rend()) {
      add("</" + name + ">" + at + " closes nothing open");
      return;
    }
    if (it != open_.rbegin())
      add("</" + name + ">" + at + " while <" + open_.back() + "> is still open; close tags in reverse order");
    open_.erase(std::prev(it.base()), open_.end());
  }

  void openTag(const std::string& name, const std::string& parent, const std::string& at) {
    if (const auto p = nestingProblem(name, parent); !p.empty()) add(p + at);
    if (isInlineTag(parent) && !isInlineTag(name))
      add("<" + name + ">" + at + " inside <" + parent + ">; inline tags hold only text and inline tags");
    open_.push_back(name);
    if (static_cast<int>(open_.size()) > kMaxLessonTextNesting) {
      add("tags nest deeper than " + std::to_string(kMaxLessonTextNesting) + at);
      open_.pop_back();
    }
  }

  /// The entity starting with the '&' at `i`; returns the position after it (after the '&' alone
  /// when it starts none).
  size_t entity(size_t i, const std::string& at) {
    const size_t semiAt = t_.substr(i, 12).find(';');
    const size_t semi = semiAt == std::string_view::npos ? std::string_view::npos : i + semiAt;
    const std::string_view ent = semi == std::string_view::npos ? std::string_view{} : t_.substr(i + 1, semi - i - 1);
    bool ok = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" || ent == "nbsp";
    if (!ok && ent.size() >= 2 && ent.front() == '#') ok = isCharacterReference(ent);
    if (!ok) {
      add("'&'" + at + " starts no entity (&amp; &lt; &gt; &quot; &apos; &nbsp; &#N; &#xH;); write &amp; for an ampersand");
      return i + 1;
    }
    return semi + 1;
  }

  /// "#N" or "#xH" naming a character that may appear in text.
  static bool isCharacterReference(std::string_view ent) {
    const bool hex = ent[1] == 'x' || ent[1] == 'X';
    const std::string_view digits = ent.substr(hex ? 2 : 1);
    long cp = 0;
    bool ok = !digits.empty() && digits.size() <= 6;
    for (char d : digits) {
      int v = -1;
      if (d >= '0' && d <= '9') v = d - '0';
      else if (hex && d >= 'a' && d <= 'f') v = d - 'a' + 10;
      else if (hex && d >= 'A' && d <= 'F') v = d - 'A' + 10;
      if (v < 0) ok = false;
      else cp = cp * (hex ? 16 : 10) + v;
    }
    return ok && cp >= 0x20 && cp != 0x7F && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
  }

  std::string_view t_;
  std::vector<std::string>& out_;
  std::vector<std::string> open_;
  bool reportedListText_ = false;
};

}  // namespace

std::vector<std::string> richTextProblems(std::string_view text) {
  std::vector<std::string> out;
  RichTextScanner(text, out).run();
  return out;
}

}  // namespace tensorscope::spec
