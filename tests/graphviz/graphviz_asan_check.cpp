// Lays out DOT files with Graphviz exactly as the explorer does (agmemread, gvLayout "dot",
// gvFreeLayout, agclose), built with AddressSanitizer so that heap corruption inside Graphviz
// aborts with a report. Prints "graphviz <version>" first, then "clean <file>" for each file.
// Exit 0 when every file laid out clean; 1 when Graphviz rejected one; an ASan report aborts.
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  GVC_t* gvc = gvContext();
  std::printf("graphviz %s\n", gvcVersion(gvc));
  std::fflush(stdout);
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i]);
    std::stringstream text;
    text << in.rdbuf();
    Agraph_t* g = in ? agmemread(text.str().c_str()) : nullptr;
    if (!g || gvLayout(gvc, g, "dot") != 0) {
      std::printf("rejected %s\n", argv[i]);
      status = 1;
      if (g) agclose(g);
      continue;
    }
    gvFreeLayout(gvc, g);
    agclose(g);
    std::printf("clean %s\n", argv[i]);
    std::fflush(stdout);
  }
  gvFreeContext(gvc);
  return status;
}
