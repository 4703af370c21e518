// Text corpora of the char_lm task: text or an error naming the file; the character vocabulary of
// a text (invalid UTF-8 refused) encodes and decodes it back exactly.
#include "fuzz_util.h"
#include "model_core/tasks.h"
#include "tasks/data_sources.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  const std::string path = fuzz::writeScratch("corpus.txt", fuzz::text(data, size));
  tasks::Corpus corpus;
  try {
    corpus = tasks::loadCorpusFile(path);
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(std::string(e.what()).find(path) != std::string::npos);
    return 0;
  }
  FUZZ_CHECK(corpus.text == fuzz::text(data, size));
  try {
    const Vocabulary v = Vocabulary::fromText(corpus.text);
    FUZZ_CHECK(v.decode(v.encode(corpus.text)) == corpus.text);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
