#pragma once
// Between safetensors data and LibTorch tensors (private to model_core: includes ATen).

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model_core/safetensors.h"

namespace tensorscope::model_core {

/// Named tensors in a caller-chosen order.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// The ATen scalar type of a dtype (BOOL -> kBool, BF16 -> kBFloat16, ...).
at::ScalarType toScalarType(DType dtype);
/// The dtype of an ATen scalar type; throws std::invalid_argument for types safetensors cannot
/// hold here (complex, quantized, ...).
DType fromScalarType(at::ScalarType type);

/// A new CPU tensor owning a copy of `data` (BOOL bytes other than 0 read as true). Throws
/// std::invalid_argument when the bytes do not match dtype and shape.
at::Tensor toTensor(const TensorData& data);
/// A contiguous little-endian copy of `tensor` (any device, strides or grad; detached).
TensorData fromTensor(const at::Tensor& tensor);

/// Reads every tensor straight into CPU tensors, sorted by name. `metadata`, when given, receives
/// "__metadata__". Throws SafetensorsError.
NamedTensors readTensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);
/// As readTensors, keyed by name.
std::map<std::string, at::Tensor> readTensorMap(const std::string& path,
                                                std::map<std::string, std::string>* metadata = nullptr);

/// Writes tensors atomically (see writeSafetensors), streaming from contiguous CPU copies. Throws
/// SafetensorsError for duplicate names, and std::invalid_argument for unsupported types.
void writeTensors(const std::string& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata = {});
void writeTensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                  const std::map<std::string, std::string>& metadata = {});

}  // namespace tensorscope::model_core
