// Between safetensors data and LibTorch tensors.
#include "io/tensor_convert.h"

#include <bit>
#include <cstring>
#include <stdexcept>

namespace tensorscope::model_core {

// Tensor storage is copied byte for byte into files that are little-endian by definition.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

// A contiguous CPU tensor with the same values, without autograd history.
at::Tensor contiguousCpu(const at::Tensor& tensor) {
  if (!tensor.defined()) throw std::invalid_argument("cannot convert an undefined tensor");
  return tensor.detach().to(at::kCPU).contiguous();
}

std::span<const std::byte> bytesOf(const at::Tensor& contiguous) {
  return {static_cast<const std::byte*>(contiguous.data_ptr()), contiguous.nbytes()};
}

std::vector<int64_t> shapeOf(const at::Tensor& tensor) {
  return std::vector<int64_t>(tensor.sizes().begin(), tensor.sizes().end());
}

}  // namespace

at::ScalarType toScalarType(DType dtype) {
  switch (dtype) {
    case DType::Bool: return at::kBool;
    case DType::U8: return at::kByte;
    case DType::I8: return at::kChar;
    case DType::I16: return at::kShort;
    case DType::I32: return at::kInt;
    case DType::I64: return at::kLong;
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::F32: return at::kFloat;
    case DType::F64: return at::kDouble;
  }
  throw std::invalid_argument("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

DType fromScalarType(at::ScalarType type) {
  switch (type) {
    case at::kBool: return DType::Bool;
    case at::kByte: return DType::U8;
    case at::kChar: return DType::I8;
    case at::kShort: return DType::I16;
    case at::kInt: return DType::I32;
    case at::kLong: return DType::I64;
    case at::kHalf: return DType::F16;
    case at::kBFloat16: return DType::BF16;
    case at::kFloat: return DType::F32;
    case at::kDouble: return DType::F64;
    default: break;
  }
  throw std::invalid_argument(std::string("safetensors cannot store tensors of type ") + c10::toString(type));
}

at::Tensor toTensor(const TensorData& data) {
  const auto numel = static_cast<uint64_t>(data.numel());
  if (data.bytes.size() / dtypeSize(data.dtype) != numel || data.bytes.size() % dtypeSize(data.dtype) != 0) {
    throw std::invalid_argument("TensorData holds " + std::to_string(data.bytes.size()) +
                                " bytes, inconsistent with its dtype and shape");
  }
  // A torch bool must be 0 or 1; copy such bytes as uint8 and compare instead of trusting them.
  const at::ScalarType storedAs = data.dtype == DType::Bool ? at::kByte : toScalarType(data.dtype);
  at::Tensor out = at::empty(data.shape, at::TensorOptions().dtype(storedAs));
  if (!data.bytes.empty()) std::memcpy(out.data_ptr(), data.bytes.data(), data.bytes.size());
  return data.dtype == DType::Bool ? out.ne(0) : out;
}

TensorData fromTensor(const at::Tensor& tensor) {
  const at::Tensor c = contiguousCpu(tensor);
  const auto bytes = bytesOf(c);
  return TensorData{fromScalarType(c.scalar_type()), shapeOf(c), std::vector<std::byte>(bytes.begin(), bytes.end())};
}

NamedTensors readTensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  std::map<std::string, at::Tensor> byName = readTensorMap(path, metadata);
  return NamedTensors(byName.begin(), byName.end());
}

std::map<std::string, at::Tensor> readTensorMap(const std::string& path, std::map<std::string, std::string>* metadata) {
  std::map<std::string, at::Tensor> tensors;
  std::vector<std::string> bools;
  const SafetensorsHeader header = readSafetensorsInto(path, [&](const std::string& name, const TensorInfo& info) {
    const bool isBool = info.dtype == DType::Bool;
    if (isBool) bools.push_back(name);
    at::Tensor& t = tensors[name] =
        at::empty(info.shape, at::TensorOptions().dtype(isBool ? at::kByte : toScalarType(info.dtype)));
    return std::span<std::byte>(static_cast<std::byte*>(t.data_ptr()), t.nbytes());
  });
  for (const auto& name : bools) tensors[name] = tensors[name].ne(0);
  if (metadata != nullptr) *metadata = header.metadata;
  return tensors;
}

void writeTensors(const std::string& path, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keepAlive;  // the contiguous copies the views point into
  keepAlive.reserve(tensors.size());
  std::map<std::string, TensorView> views;
  for (const auto& [name, tensor] : tensors) {
    const DType dtype = fromScalarType(tensor.scalar_type());
    keepAlive.push_back(contiguousCpu(tensor));
    const at::Tensor& c = keepAlive.back();
    if (!views.emplace(name, TensorView{dtype, shapeOf(c), bytesOf(c)}).second) {
      throw SafetensorsError(path, "duplicate tensor name \"" + name + "\"");
    }
  }
  writeSafetensors(path, views, metadata);
}

void writeTensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                  const std::map<std::string, std::string>& metadata) {
  writeTensors(path, NamedTensors(tensors.begin(), tensors.end()), metadata);
}

}  // namespace tensorscope::model_core
