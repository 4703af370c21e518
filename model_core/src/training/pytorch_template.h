#pragma once
// The model.py that exportPyTorch (export_pytorch.cpp) writes: a self-contained PyTorch (>= 1.13)
// mirror of the Transformer (transformer.cpp) and of every attention variant (src/attention/),
// operation for operation, reading the architecture from the exported config.json. Its source is
// real Python in the folder export_model/ beside this header (its parts concatenated in name
// order and embedded at build time: cmake/EmbedText.cmake writes generated/export_model_py.h);
// the first part's docstring is the user
// documentation of the export, and tests/model_core/training/test_export_pytorch.py checks that its
// logits equal `tensorscope infer`.

#include <string_view>

#include "export_model_py.h"  // generated: kExportModelPyText

namespace tensorscope::model_core {

inline constexpr std::string_view kPyTorchModelPy = kExportModelPyText;

}  // namespace tensorscope::model_core
