// Block-term (multilinear) attention without T (multilinearBlocked, the CPU path of a multilinear
// layer; docs/attention-variants.md §6) against the T-materialising formulation it replaces on the
// CPU (multilinearAten, kept as the oracle and the CUDA path), against an einsum written from the
// contract, and, through the layer, against the float64 loop reference (reference.cpp): outputs,
// maps and the gradients of q, k, v, the cores, Wo and the projections; full and causal; N = 1,
// odd N, R, F and P, one and many feature blocks, several position chunks, 1-3 threads; finite
// differences; causal no-leak; float32; and what is kept for backward (no B·N³ or B·N²·R tensor).

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "attention/fused_attention.h"
#include "attention/multilinear.h"
#include "attention/multilinear_blocked.h"
#include "model_core/memory_guard.h"
#include "model_core/memory_tracker.h"
#include "reference.h"
#include "spec/cost_model.h"
#include "spec/multilinear_memory.h"
#include "thsa_kernel_checks.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::testing;
using tensorscope::model_core::test::buildDouble;
using tensorscope::model_core::test::makeSpec;
using tensorscope::model_core::test::perturbParameters;
using tensorscope::model_core::test::randomInput;
using tensorscope::model_core::test::referenceMultilinear;
using tensorscope::model_core::test::weightsOf;
using tensorscope::model_core::test::WeightMap;

namespace {

struct Shape {
  int64_t B, N, R, F, block;  // block: the work-tensor budget in values (sets Fb)
};

std::string label(const Shape& s, bool causal) {
  return std::string(causal ? "causal" : "full") + " B=" + std::to_string(s.B) + " N=" + std::to_string(s.N) +
         " R=" + std::to_string(s.R) + " F=" + std::to_string(s.F) +
         " Fb=" + std::to_string(spec::multilinearFeatureBlock(s.F, s.B, s.N, s.R, s.block));
}

/// The contract's T by einsum, masked by multiplication (differentiable), then Wo·vec(T[i]).
torch::Tensor einsumMultilinear(const torch::Tensor& a, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& Wo, bool causal) {
  const int64_t B = a.size(0), N = a.size(1);
  auto T = torch::einsum("bir,bjr,bkr->bijk", {a, k, v});
  if (causal) {
    const auto seen = torch::ones({N, N}, a.options()).tril();  // [i, j]: j <= i
    T = T * seen.view({1, N, N, 1}) * seen.view({1, N, 1, N});
  }
  return torch::einsum("bip,fp->bif", {T.reshape({B, N, N * N}), Wo});
}

struct Operands {
  torch::Tensor a, k, v, Wo, G;
};

Operands randomOperands(const Shape& s, uint64_t seed, torch::Dtype dtype = torch::kDouble) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(dtype);
  return {torch::randn({s.B, s.N, s.R}, o), torch::randn({s.B, s.N, s.R}, o), torch::randn({s.B, s.N, s.R}, o),
          torch::randn({s.F, s.N * s.N}, o) / double(s.N), torch::randn({s.B, s.N, s.F}, o)};
}

/// y and the gradients of a, k, v, Wo of one formulation for the loss Σ G ⊙ y.
std::vector<torch::Tensor> outputsAndGradients(
    const Operands& in, const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&,
                                                          const torch::Tensor&, const torch::Tensor&)>& f) {
  auto a = in.a.clone().requires_grad_(true), k = in.k.clone().requires_grad_(true),
       v = in.v.clone().requires_grad_(true), Wo = in.Wo.clone().requires_grad_(true);
  const auto y = f(a, k, v, Wo);
  (y * in.G).sum().backward();
  return {y.detach(), a.grad(), k.grad(), v.grad(), Wo.grad()};
}

const char* const kNames[] = {"y", "grad a", "grad k", "grad v", "grad Wo"};

void expectAllClose(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want, double tol) {
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << kNames[i];
    const double scale = std::max(1.0, want[i].abs().max().item<double>());
    EXPECT_LT(maxAbsDiff(got[i].to(torch::kDouble), want[i].to(torch::kDouble)) / scale, tol) << kNames[i];
  }
}

const std::vector<Shape> kShapes = {
    {2, 1, 3, 4, 1 << 22},  // one position
    {2, 7, 5, 6, 1 << 22},  // odd sizes, one feature block
    {3, 9, 4, 5, 1},        // one feature per block
    {2, 13, 3, 7, 3 * 13 * 13},  // Fb = 3 (N² > B·N·R): blocks of 3, 3, 1 features
    {1, 37, 6, 5, 1 << 22},         // three position chunks (16, 16, 5)
    {2, 150, 3, 4, 2 * 150 * 3},    // chunks of 19 positions, one feature per block
};

}  // namespace

TEST(MultilinearBlocked, MatchesTheMaterialisedFormulationAndItsGradients) {
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    at::set_num_threads(threads);
    for (bool causal : {false, true})
      for (const Shape& s : kShapes) {
        SCOPED_TRACE(label(s, causal) + " threads=" + std::to_string(threads));
        const auto in = randomOperands(s, 100 + s.N + s.R);
        const auto blocked = outputsAndGradients(in, [&](auto& a, auto& k, auto& v, auto& Wo) {
          return multilinearBlocked(a, k, v, Wo, causal, s.block);
        });
        const auto aten = outputsAndGradients(
            in, [&](auto& a, auto& k, auto& v, auto& Wo) { return multilinearAten(a, k, v, Wo, causal); });
        expectAllClose(blocked, aten, 1e-12);
        EXPECT_GT(blocked[0].abs().max().item<double>(), 0.1);  // a real signal, not zeros on both sides
      }
  }
  at::set_num_threads(before);
}

TEST(MultilinearBlocked, MatchesTheContractEinsum) {
  for (bool causal : {false, true})
    for (const Shape& s : {Shape{2, 6, 3, 5, 1}, Shape{3, 11, 7, 3, 1 << 22}}) {
      SCOPED_TRACE(label(s, causal));
      const auto in = randomOperands(s, 7 + s.N);
      const auto blocked = outputsAndGradients(in, [&](auto& a, auto& k, auto& v, auto& Wo) {
        return multilinearBlocked(a, k, v, Wo, causal, s.block);
      });
      const auto ref = outputsAndGradients(
          in, [&](auto& a, auto& k, auto& v, auto& Wo) { return einsumMultilinear(a, k, v, Wo, causal); });
      expectAllClose(blocked, ref, 1e-12);
    }
}

TEST(MultilinearBlocked, CausalMaskZeroesExactlyTheFutureOfT) {
  // One Wo entry at a time: y_i reads Wo[f, j·N + k] only when j <= i and k <= i.
  const int64_t N = 5, R = 2;
  torch::manual_seed(3);
  const auto a = torch::randn({1, N, R}, torch::kDouble), k = torch::randn({1, N, R}, torch::kDouble),
             v = torch::randn({1, N, R}, torch::kDouble);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t kk = 0; kk < N; ++kk) {
      auto Wo = torch::zeros({1, N * N}, torch::kDouble);
      Wo[0][j * N + kk] = 1.0;
      const auto y = multilinearBlocked(a, k, v, Wo, /*causal=*/true).view({N});
      for (int64_t i = 0; i < N; ++i) {
        const double expected = (j <= i && kk <= i) ? (a[0][i] * k[0][j] * v[0][kk]).sum().item<double>() : 0.0;
        EXPECT_NEAR(y[i].item<double>(), expected, 1e-14) << "i=" << i << " j=" << j << " k=" << kk;
      }
    }
}

TEST(MultilinearBlocked, GradientMatchesFiniteDifferences) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const Shape s{2, 9, 3, 5, 2 * 9 * 9};  // Fb = 2
    const auto in = randomOperands(s, 21);
    const auto g = outputsAndGradients(in, [&](auto& a, auto& k, auto& v, auto& Wo) {
      return multilinearBlocked(a, k, v, Wo, causal, s.block);
    });
    expectFiniteDifferences({in.a, in.k, in.v, in.Wo}, {g[1], g[2], g[3], g[4]},
                            [&](const std::vector<torch::Tensor>& x) {
                              torch::NoGradGuard noGrad;
                              return (multilinearBlocked(x[0], x[1], x[2], x[3], causal, s.block) * in.G)
                                  .sum()
                                  .item<double>();
                            },
                            "multilinear blocked");
  }
}

TEST(MultilinearBlocked, CausalOutputsIgnoreLaterTokens) {
  torch::manual_seed(32);
  const int64_t N = 70, R = 4;
  const auto Wo = torch::randn({6, N * N}, torch::kDouble);
  expectCausalNoLeak(torch::randn({2, N, 3, R}, torch::kDouble),
                     [&](const torch::Tensor& in) {
                       return multilinearBlocked(in.select(2, 0), in.select(2, 1), in.select(2, 2), Wo, true,
                                                 4 * N * N);  // Fb = 4: blocks of 4 and 2 features
                     },
                     {0, 7, 8, 15, 16, 31, 65}, "multilinear");
}

TEST(MultilinearBlocked, Float32AgreesWithFloat64) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const Shape s{3, 40, 16, 12, 3 * 40 * 16 * 5};  // Fb = 5
    const auto in = randomOperands(s, 33);
    const auto d = outputsAndGradients(in, [&](auto& a, auto& k, auto& v, auto& Wo) {
      return multilinearBlocked(a, k, v, Wo, causal, s.block);
    });
    Operands f{in.a.to(torch::kFloat), in.k.to(torch::kFloat), in.v.to(torch::kFloat), in.Wo.to(torch::kFloat),
               in.G.to(torch::kFloat)};
    const auto g = outputsAndGradients(f, [&](auto& a, auto& k, auto& v, auto& Wo) {
      return multilinearBlocked(a, k, v, Wo, causal, s.block);
    });
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i].scalar_type(), torch::kFloat) << kNames[i];
      EXPECT_LT(maxAbsDiff(g[i].to(torch::kDouble), d[i]) / d[i].abs().max().item<double>(), 1e-5) << kNames[i];
    }
  }
}

TEST(MultilinearBlocked, KeepsOnlyItsInputsForBackward) {
  // B·N³ = 2·100³ = 2 000 000 values and B·N²·R = 160 000; what the node keeps is a, k, v
  // (B·N·R = 1 600 each) and Wo (the layer's parameter).
  const int64_t B = 2, N = 100, R = 8, F = 6;
  for (bool causal : {false, true}) {
    const auto a = torch::randn({B, N, R}).requires_grad_(true), k = torch::randn({B, N, R}).requires_grad_(true),
               v = torch::randn({B, N, R}).requires_grad_(true), Wo = torch::randn({F, N * N}).requires_grad_(true);
    const auto y = multilinearBlocked(a, k, v, Wo, causal);
    const auto saved = multilinearBlockedSavedTensors(y);
    ASSERT_EQ(saved.size(), 4u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(saved[size_t(i)].sizes(), (std::vector<int64_t>{B, N, R}));
    EXPECT_EQ(saved[3].sizes(), (std::vector<int64_t>{F, N * N}));
    EXPECT_EQ(saved[3].data_ptr(), Wo.data_ptr());  // the parameter itself, not a copy
    for (const auto& t : saved) EXPECT_LT(t.numel(), B * N * N * R / 2) << t.sizes();
  }
  EXPECT_THROW(multilinearBlockedSavedTensors(torch::randn({2}).requires_grad_(true) * 2), std::invalid_argument);
}

TEST(MultilinearBlocked, RefusesMismatchedOperands) {
  const auto a = torch::randn({2, 4, 3});
  EXPECT_THROW(multilinearBlocked(a, a, a, torch::randn({5, 15}), false), std::invalid_argument);
  EXPECT_THROW(multilinearBlocked(a, a, torch::randn({2, 4, 2}), torch::randn({5, 16}), false), std::invalid_argument);
  EXPECT_THROW(multilinearBlocked(a, a, a, torch::randn({5, 16}, torch::kDouble), false), std::invalid_argument);
  EXPECT_THROW(multilinearBlocked(a, a, a, torch::randn({5, 16}), false, 0), std::invalid_argument);
}

// ---- the layer ----------------------------------------------------------------------------------

namespace {

spec::AttentionSpec layerSpec(bool causal, bool bias, bool coreSoftmax, int N, int R, int P, int F) {
  spec::Sizes z;
  z.F = F;
  z.R = R;
  z.P = P;
  z.seq_len = N;
  auto s = makeSpec(spec::Variant::Multilinear, z, causal, bias);
  s.core_softmax = coreSoftmax;
  return s;
}

/// y, maps and the gradient of every parameter (by name) for the loss Σ G ⊙ y.
struct LayerRun {
  torch::Tensor y, maps, xGrad;
  std::map<std::string, torch::Tensor> grads;
};

LayerRun runLayer(AttentionModuleImpl& m, const torch::Tensor& x, const torch::Tensor& G) {
  m.zero_grad();
  auto xg = x.clone().requires_grad_(true);
  ForwardOptions o;
  o.with_maps = true;
  const auto out = m.forward(xg, o);
  (out.y * G).sum().backward();
  LayerRun r{out.y.detach(), out.maps.detach(), xg.grad(), {}};
  for (const auto& p : m.named_parameters()) r.grads[p.key()] = p.value().grad().clone();
  return r;
}

}  // namespace

TEST(MultilinearLayer, CpuPathMatchesTheMaterialisedPathAndTheFloat64Reference) {
  struct Config {
    bool causal, bias, coreSoftmax;
    int B, N, R, P, F;
  };
  for (const Config& c : std::vector<Config>{{false, true, true, 2, 7, 5, 3, 6},
                                             {true, true, true, 3, 9, 3, 1, 5},
                                             {true, false, false, 2, 17, 4, 2, 3},
                                             {false, false, false, 1, 1, 2, 3, 4}}) {
    const auto s = layerSpec(c.causal, c.bias, c.coreSoftmax, c.N, c.R, c.P, c.F);
    SCOPED_TRACE(test::describe(s));
    AttentionModule m = buildDouble(s, 5);
    perturbParameters(*m, 6);
    const auto x = randomInput(c.B, c.N, c.F, 7);
    torch::manual_seed(8);
    const auto G = torch::randn({c.B, c.N, c.F}, torch::kDouble);
    ASSERT_TRUE(fusedAttentionSupports(x));
    const LayerRun cpu = runLayer(*m, x, G);
    setFusedAttentionEnabled(false);
    const LayerRun aten = runLayer(*m, x, G);
    setFusedAttentionEnabled(true);
    const auto ref = referenceMultilinear(s, weightsOf(*m), x);
    test::expectClose(cpu.y, ref.y, 1e-12, "y against the reference");
    test::expectClose(cpu.y, aten.y, 1e-12, "y against the materialised path");
    test::expectClose(cpu.maps, aten.maps, 1e-12, "maps");
    test::expectClose(cpu.maps.tril(), ref.maps.tril(), 1e-12, "maps (j <= i) against the reference");
    test::expectClose(cpu.xGrad, aten.xGrad, 1e-12, "grad x");
    ASSERT_EQ(cpu.grads.size(), aten.grads.size());
    for (const auto& [name, g] : cpu.grads) test::expectClose(g, aten.grads.at(name), 1e-12, "grad " + name);
    // Every weight's gradient against central differences of the float64 loop reference.
    const WeightMap w = weightsOf(*m);
    for (const auto& [name, g] : cpu.grads) {
      const int64_t n = g.numel();
      for (int64_t index : {int64_t(0), n / 2, n - 1}) {
        const double eps = 1e-6;
        WeightMap plus = w, minus = w;
        plus[name] = w.at(name).clone();
        minus[name] = w.at(name).clone();
        plus[name].view({-1})[index] += eps;
        minus[name].view({-1})[index] -= eps;
        const double numeric = ((referenceMultilinear(s, plus, x).y - referenceMultilinear(s, minus, x).y) * G)
                                   .sum()
                                   .item<double>() /
                               (2 * eps);
        EXPECT_NEAR(g.view({-1})[index].item<double>(), numeric, 1e-7 * (1 + std::abs(numeric)))
            << name << " entry " << index;
      }
    }
  }
}

TEST(MultilinearLayer, KeepsNoCubicTensorForBackward) {
  // Storage alive after a training forward (what the autograd graph holds, plus y) at B = 4, N = 96,
  // R = 8, F = 8, float64: T would be B·N³ = 3 538 944 values (27 MiB), a⊙k B·N²·R = 294 912.
  CpuMemoryTracker::install();
  const int B = 4, N = 96, R = 8, F = 8;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const auto s = layerSpec(causal, true, true, N, R, 2, F);
    AttentionModule m = buildDouble(s, 1);
    m->train();
    const auto x = randomInput(B, N, F, 2);
    int64_t cpuKept = 0, atenKept = 0;
    {
      const auto before = CpuMemoryTracker::currentBytes();
      const auto y = m->forward(x, {}).y;
      cpuKept = CpuMemoryTracker::currentBytes() - before;
    }
    setFusedAttentionEnabled(false);
    {
      const auto before = CpuMemoryTracker::currentBytes();
      const auto y = m->forward(x, {}).y;
      atenKept = CpuMemoryTracker::currentBytes() - before;
    }
    setFusedAttentionEnabled(true);
    const int64_t bnr = int64_t(B) * N * R * 8, bnf = int64_t(B) * N * F * 8;
    // q, k, v, a = q ⊙ ḡ and y (with and without the bias), plus small tensors.
    EXPECT_LE(cpuKept, 4 * bnr + 2 * bnf + 65536);
    EXPECT_LT(cpuKept, int64_t(B) * N * N * R * 8 / 4);
    // The materialised path keeps T (the test can tell).
    EXPECT_GT(atenKept, int64_t(B) * N * N * N * 8);
    // The cost model's activation estimate covers what is kept.
    EXPECT_GE(spec::estimateCost(s, B, N, 8).activation_bytes, double(cpuKept) - 2.0 * bnf);
  }
}

TEST(MultilinearLayer, TheLayerEstimateIsLinearInNAndTheDiagramEstimateStillCountsT) {
  // The layer (CPU path) keeps B·N·R-sized tensors; the diagram's tensor network forms T itself, so
  // diagram values and `diagram --check` keep refusing by T's size.
  auto s = layerSpec(true, false, true, 512, 16, 2, 32);
  const double layer512 = estimateLayerMemory(s, 4, 512, 4, true) - 2.0 * 32 * 512.0 * 512 * 4;  // less Wo and ∂Wo
  s.sizes.seq_len = 1024;
  const double layer1024 = estimateLayerMemory(s, 4, 1024, 4, true) - 2.0 * 32 * 1024.0 * 1024 * 4;
  EXPECT_LT(layer1024 / layer512, 2.2);
  EXPECT_LT(layer1024, 4.0 * 1024 * 1024 * 1024 * 4 / 100);  // far below T's B·N³ float32
  EXPECT_GE(estimateNetworkMemory(s, 4, 1024, 4), 4.0 * 1024 * 1024 * 1024 * 4);
  EXPECT_LT(estimateNetworkMemory(s, 4, 1024, 4), 1.2 * (4.0 * 1024 * 1024 * 1024 * 4 + layer1024 + 32 * 1024.0 * 1024 * 4 +
                                                        4.0 * 1024 * 1024 * 16 * 4));
}

TEST(MultilinearLayer, TheThreeActivationFiguresAgreeOnBothPaths) {
  // One figure (spec::multilinearActivationBytes) for both formulations: the blocked CPU path's is
  // the cost model's, the T-materialising path's is written out here; the layer's guard refuses by
  // the figure of the path it runs (accepted just over it, refused just under it), and the
  // diagram's network estimate adds the T-materialising figure to the layer's forward estimate.
  using spec::MultilinearPath;
  const int B = 3, N = 12, R = 5, F = 6;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const auto s = layerSpec(causal, true, true, N, R, 2, F);
    const double blocked = spec::multilinearActivationBytes(s, B, 8, MultilinearPath::BlockedCpu);
    const double materialised = spec::multilinearActivationBytes(s, B, 8, MultilinearPath::MaterialisedT);
    EXPECT_EQ(blocked, spec::estimateCost(s, B, N, 8).activation_bytes);
    const double b = B, n = N, r = R, f = F;
    EXPECT_DOUBLE_EQ(materialised, (4 * b * n * r + b * n * n * r + b * n * n * n + b * n * f) * 8);
    EXPECT_GT(materialised, blocked);
    EXPECT_DOUBLE_EQ(estimateNetworkMemory(s, B, N, 4) - estimateLayerMemory(s, B, N, 4, false),
                     spec::multilinearActivationBytes(s, B, 4, MultilinearPath::MaterialisedT));
    AttentionModule m = buildDouble(s, 1);
    auto* ml = dynamic_cast<MultilinearImpl*>(m.get());
    ASSERT_NE(ml, nullptr);
    const auto x = randomInput(B, N, F, 2);
    torch::NoGradGuard noGrad;
    for (bool fused : {true, false}) {
      SCOPED_TRACE(fused ? "blocked CPU path" : "T-materialising path");
      setFusedAttentionEnabled(fused);
      const double need = fused ? blocked : materialised;
      ml->setMaxActivationBytes(need * (1 + 1e-9));
      EXPECT_NO_THROW(m->forward(x, {}));
      ml->setMaxActivationBytes(need * (1 - 1e-9));
      EXPECT_THROW(m->forward(x, {}), std::runtime_error);
    }
    setFusedAttentionEnabled(true);
  }
  EXPECT_THROW(spec::multilinearActivationBytes(makeSpec(spec::Variant::Dimwise, spec::Sizes{}, false, false), 1, 4,
                                                MultilinearPath::BlockedCpu),
               std::invalid_argument);
}
