#include "attention/thsa_core.h"

namespace tensorscope::model_core {
namespace {

torch::Tensor fromValues(const std::vector<double>& v, std::vector<int64_t> shape) {
  return torch::tensor(v, torch::kDouble).reshape(shape).to(torch::kFloat);
}

}  // namespace

ThsaCoreImpl::ThsaCoreImpl(const spec::CoreSpec& core, int H, int D, int R) : spec_(core), H_(H), D_(D), R_(R) {
  using spec::FactorKind;
  if (isDense()) {
    auto values = fromValues(core.dense_values, {R, R});
    std::vector<int64_t> maskInt(core.trainable_mask.begin(), core.trainable_mask.end());
    const auto mask = torch::tensor(maskInt, torch::kLong).reshape({R, R}).to(torch::kBool);
    values_ = register_parameter("dense", values.clone(), /*requires_grad=*/mask.any().item<bool>());
    if (!mask.all().item<bool>()) {
      frozen_ = register_buffer("frozen", values.clone());
      mask_ = register_buffer("mask", mask);
    }
    return;
  }
  if (isLowRank()) {
    auto U = fromValues(core.u_values, {R, core.rank}), V = fromValues(core.v_values, {R, core.rank});
    if (core.factors_trainable) {
      u_ = register_parameter("U", U);
      v_ = register_parameter("V", V);
    } else {
      u_ = register_buffer("U", U);
      v_ = register_buffer("V", V);
    }
    return;
  }
  a_ = factor("A", core.a, H);
  if (core.b.kind == FactorKind::Rank1) {
    const auto& v = core.b.values;
    auto c2 = fromValues(std::vector<double>(v.begin(), v.begin() + D), {D});
    auto c3 = fromValues(std::vector<double>(v.begin() + D, v.end()), {D});
    if (core.b.trainable_rank1) {
      c2_ = register_parameter("c2", c2);
      c3_ = register_parameter("c3", c3);
    } else {
      c2_ = register_buffer("c2", c2);
      c3_ = register_buffer("c3", c3);
    }
  } else {
    b_ = factor("B", core.b, D);
  }
}

torch::Tensor ThsaCoreImpl::factor(const char* name, const spec::CoreFactor& f, int n) {
  using spec::FactorKind;
  switch (f.kind) {
    case FactorKind::Identity: return register_buffer(name, torch::eye(n));
    case FactorKind::Ones: return register_buffer(name, torch::ones({n, n}));
    case FactorKind::Fixed: return register_buffer(name, fromValues(f.values, {n, n}));
    case FactorKind::Trainable: return register_parameter(name, fromValues(f.values, {n, n}));
    case FactorKind::Rank1: break;  // validation keeps rank1 to B, handled by the caller
  }
  throw std::invalid_argument("core factor kind rank1 is only allowed for B");
}

torch::Tensor ThsaCoreImpl::effective() const {
  // Module::to(dtype) also converts bool buffers, so the mask is read back as bool here.
  if (isDense()) return mask_.defined() ? torch::where(mask_.to(torch::kBool), values_, frozen_) : values_;
  if (isLowRank()) return torch::matmul(u_, v_.t());
  const auto B = c2_.defined() ? torch::outer(c2_, c3_) : b_;
  return torch::kron(a_, B) * spec_.scale;  // C[(h,d),(h',d')] = s·A[h,h']·B[d,d']
}

std::vector<NamedWeight> ThsaCoreImpl::namedWeights() const {
  using spec::FactorKind;
  std::vector<NamedWeight> out;
  if (isDense()) {
    // Saved as the effective C; loading writes every entry, frozen ones must match the spec.
    out.push_back({"core", effective(), values_});
    return out;
  }
  out.push_back({"core", effective(), {}});
  if (isLowRank()) {
    out.push_back({"core.U", u_, spec_.factors_trainable ? u_ : torch::Tensor()});
    out.push_back({"core.V", v_, spec_.factors_trainable ? v_ : torch::Tensor()});
    return out;
  }
  auto add = [&](const char* name, const torch::Tensor& t, FactorKind kind, bool trainable) {
    if (kind == FactorKind::Identity || kind == FactorKind::Ones) return;
    out.push_back({name, t, trainable ? t : torch::Tensor()});
  };
  add("core.A", a_, spec_.a.kind, spec_.a.kind == FactorKind::Trainable);
  if (c2_.defined()) {
    add("core.c2", c2_, FactorKind::Rank1, spec_.b.trainable_rank1);
    add("core.c3", c3_, FactorKind::Rank1, spec_.b.trainable_rank1);
  } else {
    add("core.B", b_, spec_.b.kind, spec_.b.kind == FactorKind::Trainable);
  }
  return out;
}

}  // namespace tensorscope::model_core
