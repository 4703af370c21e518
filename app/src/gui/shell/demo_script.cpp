#include "gui/shell/demo_script.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "files/read_file.h"
#include "spec/attention_spec.h"
#include "spec/json_reader.h"

namespace tensorscope::app {
namespace {

enum class Arg { None, Optional, Count, Text, OptionalText };

struct Syntax {
  const char* name;
  Arg arg;
};

constexpr Syntax kCommands[] = {
    {"preset", Arg::Text},    {"run", Arg::Count},     {"session", Arg::Text}, {"train", Arg::Optional},
    {"wait-step", Arg::Count}, {"wait-end", Arg::None}, {"fork", Arg::None},    {"wait-ms", Arg::Count},
    {"dock", Arg::Text},      {"theme", Arg::Text},    {"screenshot", Arg::Text}, {"figures", Arg::Text},
    {"stop", Arg::None},      {"quit", Arg::None},     {"probe", Arg::OptionalText}, {"sweep", Arg::Text},
    {"inspect", Arg::Text},   {"plan-step", Arg::Count}, {"lesson", Arg::Text},  {"lesson-do", Arg::None},
    {"lesson-next", Arg::None}, {"lab", Arg::Text},      {"layout", Arg::Text},
    {"presenter", Arg::Text},
    {"roles-colour", Arg::Text}, {"slot", Arg::Text}, {"match", Arg::Text}, {"positions", Arg::Text},
    {"mixing", Arg::Text},    {"mixing-draw", Arg::Text},
};

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

bool isCount(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size() && v >= 0;
}

// Built with append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string temporaries.
std::string inQuotes(std::string_view s) {
  std::string out = "'";
  out.append(s.substr(0, 40));
  if (s.size() > 40) out.append("…");
  return out.append("'");
}

}  // namespace

std::vector<DemoCommand> parseDemoScript(std::string_view text, const std::string& source) {
  std::vector<DemoCommand> out;
  int lineNo = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++lineNo;
    const auto eol = text.find('\n', pos);
    const std::string_view raw = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    const auto fail = [&](const std::string& why) {
      throw std::invalid_argument(source + " line " + std::to_string(lineNo) + ": " + why);
    };
    if (raw.size() > kMaxDemoLineBytes)
      fail("the line has " + std::to_string(raw.size()) + " bytes; at most " + std::to_string(kMaxDemoLineBytes));
    if (raw.find('\0') != std::string_view::npos) fail("a NUL byte; a demo script is text");
    const std::string_view line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const auto space = line.find_first_of(" \t");
    DemoCommand c;
    c.name = std::string(line.substr(0, space));
    c.arg = space == std::string_view::npos ? std::string() : std::string(trim(line.substr(space)));
    c.line = lineNo;
    const Syntax* syntax = nullptr;
    for (const auto& s : kCommands)
      if (c.name == s.name) syntax = &s;
    if (!syntax) {
      std::string list;
      for (const auto& s : kCommands) list += (list.empty() ? "" : ", ") + std::string(s.name);
      fail("unknown command " + inQuotes(c.name) + " (known: " + list + ")");
    }
    switch (syntax->arg) {
      case Arg::None:
        if (!c.arg.empty()) fail(c.name + " takes no argument; got " + inQuotes(c.arg));
        break;
      case Arg::Optional:
      case Arg::Count:
        if (syntax->arg == Arg::Count && c.arg.empty()) fail(c.name + " needs a whole number");
        if (!c.arg.empty() && !isCount(c.arg)) fail(c.name + " needs a whole number >= 0; got " + inQuotes(c.arg));
        break;
      case Arg::Text:
        if (c.arg.empty()) fail(c.name + " needs an argument");
        break;
      case Arg::OptionalText:
        break;
    }
    if (c.name == "theme" && c.arg != "light" && c.arg != "dark") fail("theme is light or dark; got " + inQuotes(c.arg));
    if (c.name == "presenter" && c.arg != "on" && c.arg != "off") fail("presenter is on or off; got " + inQuotes(c.arg));
    if (c.name == "roles-colour" && c.arg != "label" && c.arg != "cluster")
      fail("roles-colour is label or cluster; got " + inQuotes(c.arg));
    if (c.name == "slot" && (c.arg.find_first_of(" \t") == std::string::npos || c.arg.rfind("slots.", 0) != 0))
      fail("slot needs a field and a value, e.g. 'slot slots.kv_groups 1'; got " + inQuotes(c.arg));
    if (c.name == "preset") {
      const auto names = spec::specPresetNames();
      if (std::find(names.begin(), names.end(), c.arg) == names.end()) fail("unknown preset " + inQuotes(c.arg));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<DemoCommand> readDemoScript(const std::string& path) {
  std::string text;
  try {
    text = files::readBoundedFile(path, kMaxDemoScriptBytes);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(std::string("cannot read demo script: ") + e.what());
  }
  return parseDemoScript(text, path);
}

std::string formatDemoScript(const std::vector<DemoCommand>& commands) {
  std::string text;
  for (const auto& c : commands) text += c.name + (c.arg.empty() ? "" : " " + c.arg) + "\n";
  return text;
}

}  // namespace tensorscope::app
