# Writes a C++ header holding a text file as a raw string literal (a script: cmake -P).
#   cmake -DIN=file.py -DOUT=file_py.h -DNAME=kSomeText -P EmbedText.cmake
# IN may be a folder: its *.py files, concatenated in name order, are the text (the exported
# model.py is written in parts, model_core/src/training/export_model/).
# The header is only rewritten when its content changes, so an unchanged text rebuilds nothing.
foreach(var IN ITEMS IN OUT NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "EmbedText.cmake: -D${var}=... is required")
  endif()
endforeach()
if(IS_DIRECTORY "${IN}")
  file(GLOB parts LIST_DIRECTORIES false "${IN}/*.py")
  list(SORT parts)
  if(NOT parts)
    message(FATAL_ERROR "EmbedText.cmake: ${IN} has no *.py parts")
  endif()
  set(text "")
  foreach(part IN LISTS parts)
    file(READ "${part}" part_text)
    string(APPEND text "${part_text}")
  endforeach()
else()
  file(READ "${IN}" text)
endif()
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
