// Explorer sessions (.tsession): a session or std::invalid_argument; a session's JSON is a fixed
// point of parse ∘ serialise, also for a run whose design does not validate (kept as saved, so a
// session always reopens: invalidRuns names it).
#include "fuzz_util.h"
#include "gui/document/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tensorscope::app::Session;
  Session s;
  try {
    s = Session::fromJson(QString::fromUtf8(reinterpret_cast<const char*>(data), qsizetype(size)));
  } catch (const std::invalid_argument&) {
    return 0;
  }
  (void)tensorscope::app::invalidRuns(s);
  const QString once = s.toJson();
  FUZZ_CHECK(Session::fromJson(once).toJson() == once);
  return 0;
}
