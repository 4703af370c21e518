# Writes a C++ header holding a text file as a raw string literal (a script: cmake -P).
#   cmake -DIN=file.py -DOUT=file_py.h -DNAME=kSomeText -P EmbedText.cmake
# The header is only rewritten when its content changes, so an unchanged text rebuilds nothing.
foreach(var IN ITEMS IN OUT NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "EmbedText.cmake: -D${var}=... is required")
  endif()
endforeach()
file(READ "${IN}" text)
string(FIND "${text}" ")TSTEXT\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )TSTEXT\" and cannot be embedded")
endif()
get_filename_component(source "${IN}" NAME)
set(header "// Generated from ${source} by cmake/EmbedText.cmake at build time; edit ${source}, not this.
#pragma once
#include <string_view>

namespace tensorscope::model_core {

inline constexpr std::string_view ${NAME} = R\"TSTEXT(${text})TSTEXT\";

}  // namespace tensorscope::model_core
")
file(WRITE "${OUT}.tmp" "${header}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
