#include <stdexcept>

#include "attention/attention_module.h"
#include "attention/mhsa.h"
#include "attention/mla.h"
#include "attention/mta.h"
#include "attention/multilinear.h"
#include "attention/thsa.h"
#include "attention/tpa.h"
#include "spec/validation.h"

namespace tensorscope::model_core {

namespace {
AttentionModule wrap(std::shared_ptr<AttentionModuleImpl> impl) { return AttentionModule(std::move(impl)); }
}  // namespace

AttentionModule makeAttentionModule(const spec::AttentionSpec& s, int layer) {
  if (const auto issues = spec::validate(s); !issues.empty())
    throw std::invalid_argument("invalid attention spec:\n" + spec::formatIssues(issues));
  using spec::Variant;
  switch (s.variant) {
    case Variant::Mhsa:
    case Variant::FixedHead:
    case Variant::Tp:
      if (s.slots.latent.enabled()) return wrap(std::make_shared<MlaImpl>(s));
      if (s.slots.tpa.enabled()) return wrap(std::make_shared<TpaImpl>(s));
      if (s.slots.mta.enabled()) return wrap(std::make_shared<MtaImpl>(s, layer));
      return wrap(std::make_shared<MhsaImpl>(s, layer));
    case Variant::Thsa: return wrap(std::make_shared<ThsaImpl>(s));
    case Variant::ThsaLinear: return wrap(std::make_shared<ThsaLinearImpl>(s));
    case Variant::Multilinear: return wrap(std::make_shared<MultilinearImpl>(s));
    case Variant::Dimwise: return wrap(std::make_shared<DimwiseImpl>(s));
  }
  throw std::invalid_argument("unknown attention variant");
}

}  // namespace tensorscope::model_core
