// Precompiled header shared by every torch target (TENSORSCOPE_ENABLE_PCH). Narrow includes only:
// <torch/torch.h> would pull in the whole API and double compile times.
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>
#include <torch/utils.h>
