#include "training/adamw.h"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <stdexcept>

namespace tensorscope::model_core {

AdamW::AdamW(std::vector<std::pair<std::string, torch::Tensor>> params, Options options) : options_(options) {
  for (auto& [name, p] : params) {
    if (!p.requires_grad()) continue;
    slots_.push_back({name, p, torch::zeros_like(p), torch::zeros_like(p), p.dim() >= 2});
  }
}

void AdamW::zeroGrad() {
  for (auto& s : slots_)
    if (s.param.grad().defined()) s.param.mutable_grad().zero_();
}

void AdamW::step(double lr) {
  torch::NoGradGuard noGrad;
  ++t_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double c1 = 1.0 - std::pow(b1, double(t_)), c2 = 1.0 - std::pow(b2, double(t_));
  for (auto& s : slots_) {
    const auto& g = s.param.grad();
    if (!g.defined()) continue;
    if (s.decay && options_.weight_decay > 0) s.param.mul_(1.0 - lr * options_.weight_decay);
    s.m.mul_(b1).add_(g, 1.0 - b1);
    s.v.mul_(b2).addcmul_(g, g, 1.0 - b2);
    const auto denom = (s.v / c2).sqrt_().add_(options_.eps);
    s.param.addcdiv_(s.m, denom, -lr / c1);
  }
}

void AdamW::prepareDeviceStep(double lr) {
  torch::NoGradGuard noGrad;
  ++t_;
  const double c1 = 1.0 - std::pow(options_.beta1, double(t_)), c2 = 1.0 - std::pow(options_.beta2, double(t_));
  const auto values = torch::tensor({float(1.0 - lr * options_.weight_decay), float(1.0 / c2), float(lr / c1)});
  prepareDeviceState();
  if (hyper_.defined()) hyper_.copy_(values);
}

void AdamW::prepareDeviceState() {
  if (!hyper_.defined() && !slots_.empty())
    hyper_ = torch::zeros({3}, slots_.front().param.options().dtype(torch::kFloat));
}

void AdamW::applyDeviceStep() {
  torch::NoGradGuard noGrad;
  if (slots_.empty()) return;  // no trainable parameter
  // A captured update reads the factors where they are now: they must exist before the capture.
  if (!hyper_.defined()) throw std::logic_error("AdamW::applyDeviceStep before prepareDeviceState");
  const double b1 = options_.beta1, b2 = options_.beta2;
  const auto decay = hyper_.select(0, 0), invC2 = hyper_.select(0, 1), lrOverC1 = hyper_.select(0, 2);
  for (auto& s : slots_) {
    const auto& g = s.param.grad();
    if (!g.defined()) continue;
    if (s.decay && options_.weight_decay > 0) s.param.mul_(decay);
    s.m.mul_(b1).add_(g, 1.0 - b1);
    s.v.mul_(b2).addcmul_(g, g, 1.0 - b2);
    const auto denom = (s.v * invC2).sqrt_().add_(options_.eps);
    s.param.sub_(s.m / denom * lrOverC1);
  }
}

std::vector<std::pair<std::string, torch::Tensor>> AdamW::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& s : slots_) {
    out.emplace_back("exp_avg." + s.name, s.m);
    out.emplace_back("exp_avg_sq." + s.name, s.v);
  }
  return out;
}

void AdamW::loadState(const std::map<std::string, torch::Tensor>& tensors, int64_t step) {
  std::string problems;
  for (auto& s : slots_)
    for (auto* target : {&s.m, &s.v}) {
      const std::string key = (target == &s.m ? "exp_avg." : "exp_avg_sq.") + s.name;
      auto it = tensors.find(key);
      if (it == tensors.end()) problems += "\n  missing '" + key + "'";
      else if (!it->second.sizes().equals(target->sizes())) problems += "\n  '" + key + "' has the wrong shape";
    }
  if (!problems.empty()) throw std::invalid_argument("optimizer state does not fit the model:" + problems);
  torch::NoGradGuard noGrad;
  for (auto& s : slots_) {
    s.m.copy_(tensors.at("exp_avg." + s.name));
    s.v.copy_(tensors.at("exp_avg_sq." + s.name));
  }
  t_ = step;
}

double clipGradNorm(const std::vector<torch::Tensor>& params, double maxNorm) {
  torch::NoGradGuard noGrad;
  std::vector<torch::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().norm(2).to(torch::kDouble));
  if (norms.empty()) return 0.0;
  const double total = torch::stack(norms).norm(2).item<double>();
  if (maxNorm > 0 && std::isfinite(total) && total > maxNorm) {
    const double scale = maxNorm / (total + 1e-6);
    for (const auto& p : params)
      if (p.grad().defined()) p.grad().mul_(scale);
  }
  return total;
}

torch::Tensor gradNormTensor(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard noGrad;
  std::vector<torch::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().norm(2).to(torch::kDouble));
  if (norms.empty()) return {};
  return torch::stack(norms).norm(2);
}

void clipGradsByNorm(const std::vector<torch::Tensor>& params, const torch::Tensor& norm, double maxNorm) {
  if (!(maxNorm > 0) || !norm.defined()) return;
  torch::NoGradGuard noGrad;
  // The factor of clipGradNorm, computed on the device in float64 (a true division, as on the host).
  const auto factor = torch::where(norm > maxNorm, torch::full_like(norm, maxNorm) / (norm + 1e-6), torch::ones_like(norm));
  for (const auto& p : params)
    if (p.grad().defined()) p.grad().mul_(factor);
}

double scheduledLr(int64_t step, int64_t total, int64_t warmup, double lr, double minRatio) {
  if (warmup > 0 && step <= warmup) return lr * double(step) / double(warmup);
  const double span = std::max<int64_t>(1, total - warmup);
  const double progress = std::min(1.0, double(step - warmup) / span);
  return lr * (minRatio + (1.0 - minRatio) * 0.5 * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace tensorscope::model_core
