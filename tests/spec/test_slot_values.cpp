// The values drawn into a headed layer's slots (spec/slot_values.h): talking heads' mixings C^pre
// and C′ with frozen entries, multi-token attention's kernels; their JSON, validation, presets,
// costs and the rule that drops values a structural edit leaves without a shape.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <functional>

#include "spec/cost_model.h"
#include "spec/slot_values.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

using namespace tensorscope::spec;

namespace {

std::vector<Issue> issuesOf(const std::string& text) {
  try {
    const auto s = fromJson(text);
    return validate(s);
  } catch (const SpecError& e) {
    return e.issues();
  }
}

bool mentions(const std::vector<Issue>& issues, const std::string& field, const std::string& text) {
  for (const auto& i : issues)
    if (i.field == field && i.message.find(text) != std::string::npos) return true;
  return false;
}

std::string dump(const std::vector<Issue>& issues) { return formatIssues(issues); }

AttentionSpec talkingHeads(int H) {
  auto s = makeSpecPreset("talking_heads");
  s.sizes.H = H;
  s.sizes.D = 4;
  return s;
}

}  // namespace

TEST(SlotValues, EmptyMeansTheIdentityAndEveryEntryTrained) {
  const HeadMixing none;
  EXPECT_TRUE(none.isDefault());
  EXPECT_EQ(mixingValues(none, 3), (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(mixingMask(none, 2), (std::vector<unsigned char>{1, 1, 1, 1}));
  EXPECT_EQ(mixingTrainableCount(none, 5), 25);
  // Drawn back to the identity with every entry trained: the default again, byte for byte.
  EXPECT_TRUE(canonicalMixing({1, 0, 0, 1}, {1, 1, 1, 1}, 2).isDefault());
  const auto drawn = canonicalMixing({1, 0.5, 0, 1}, {1, 1, 1, 1}, 2);
  EXPECT_FALSE(drawn.isDefault());
  EXPECT_EQ(drawn.values, (std::vector<double>{1, 0.5, 0, 1}));
  const auto frozenIdentity = canonicalMixing({1, 0, 0, 1}, {1, 0, 7, 1}, 2);
  EXPECT_EQ(frozenIdentity.trainable_mask, (std::vector<unsigned char>{1, 0, 1, 1})) << "mask entries become 0/1";
  EXPECT_EQ(mixingTrainableCount(frozenIdentity, 2), 3);
  EXPECT_THROW(canonicalMixing({1, 0, 0}, {1, 1, 1}, 2), std::invalid_argument);
}

TEST(SlotValues, MixingPresetsAreWhatTheirNamesSay) {
  const int H = 4;
  EXPECT_TRUE(makeMixingPreset("identity", H).isDefault());
  const auto avg = makeMixingPreset("average", H);
  for (double v : avg.values) EXPECT_DOUBLE_EQ(v, 0.25);
  EXPECT_EQ(mixingTrainableCount(avg, H), 16);
  const auto swap = makeMixingPreset("swap", H);
  for (int h = 0; h < H; ++h)
    for (int l = 0; l < H; ++l) EXPECT_EQ(swap.values[size_t(h) * H + l], l == (h + 1) % H ? 1.0 : 0.0);
  const auto frozen = makeMixingPreset("identity_frozen", H);
  EXPECT_EQ(mixingValues(frozen, H), mixingValues({}, H));
  EXPECT_EQ(mixingTrainableCount(frozen, H), 0);
  const auto diagonal = makeMixingPreset("diagonal_only", H);
  EXPECT_EQ(mixingTrainableCount(diagonal, H), H);
  for (int h = 0; h < H; ++h) EXPECT_EQ(diagonal.trainable_mask[size_t(h) * H + h], 1);
  for (const auto& name : mixingPresetNames()) {
    auto s = talkingHeads(H);
    s.slots.post_mixing = makeMixingPreset(name, H);
    EXPECT_TRUE(validate(s).empty()) << name << ": " << dump(validate(s));
  }
  try {
    makeMixingPreset("nope", H);
    FAIL() << "an unknown preset is refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("identity, average, swap, identity_frozen, diagonal_only"), std::string::npos)
        << e.what();
  }
}

TEST(SlotValues, MtaKernelsStartAsTheOfficialIdentityForEveryPad) {
  Mta m;
  m.q_kernel = 3;
  m.k_kernel = 5;
  for (const auto& [pad, self] : {std::pair{MtaPad::Both, 2}, std::pair{MtaPad::Left, 4}, std::pair{MtaPad::Right, 0}}) {
    m.pad = pad;
    EXPECT_EQ(mtaKeySelf(5, pad), self);
    const auto v = mtaKernelValues(m, 2, false);
    ASSERT_EQ(v.size(), 2u * 3 * 5);
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j)
          EXPECT_EQ(v[(size_t(h) * 3 + i) * 5 + j], i == 2 && j == self ? 1.0 : 0.0) << h << i << j;
  }
  EXPECT_TRUE(mtaKernelValues(m, 2, true).empty()) << "no post-softmax convolution";
  // Drawn values equal to the identity are kept as none; others as given; a wrong size is refused.
  auto id = mtaKernelValues(m, 2, false);
  setMtaKernelValues(m, 2, false, id);
  EXPECT_TRUE(m.kernel_values.empty());
  id[0] = 0.5;
  setMtaKernelValues(m, 2, false, id);
  EXPECT_EQ(m.kernel_values, id);
  EXPECT_EQ(mtaKernelValues(m, 2, false), id);
  EXPECT_THROW(setMtaKernelValues(m, 2, false, {1.0}), std::invalid_argument);
  // Presets: every logit the mean of its window, or of its own query's keys.
  for (double x : makeMtaKernelPreset("average", m, 2, false)) EXPECT_DOUBLE_EQ(x, 1.0 / 15);
  const auto blur = makeMtaKernelPreset("key_blur", m, 2, false);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_DOUBLE_EQ(blur[size_t(i) * 5 + j], i == 2 ? 0.2 : 0.0);
  Mta plain;  // the same sizes and pad, nothing drawn
  plain.q_kernel = 3;
  plain.k_kernel = 5;
  plain.pad = m.pad;
  EXPECT_EQ(makeMtaKernelPreset("identity", m, 2, false), mtaKernelValues(plain, 2, false));
  EXPECT_THROW(makeMtaKernelPreset("average", m, 2, true), std::invalid_argument);
  EXPECT_THROW(makeMtaKernelPreset("nope", m, 2, false), std::invalid_argument);
}

TEST(SlotValues, DrawnValuesRoundTripThroughJsonAndFilesWithoutThemReadAsBefore) {
  auto s = talkingHeads(2);
  s.slots.post_mixing = {{0.5, 0.5, -0.25, 1.0}, {1, 0, 1, 1}};
  s.slots.pre_mixing = {{1.0, 0.125, 0.0, 1.0}, {1, 1, 1, 1}};
  const std::string text = toJson(s);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["slots"]["post_mixing"]["values"], nlohmann::json::parse("[[0.5, 0.5], [-0.25, 1.0]]"));
  EXPECT_EQ(j["slots"]["post_mixing"]["trainable"], nlohmann::json::parse("[[1, 0], [1, 1]]"));
  EXPECT_EQ(fromJson(text), s);
  // A preset's file has no drawn values: what earlier versions wrote.
  EXPECT_EQ(toJson(talkingHeads(2)).find("mixing\""), std::string::npos);
  // "trainable" may be one boolean, or left out (every entry trained).
  auto k = j;
  k["slots"]["post_mixing"]["trainable"] = false;
  EXPECT_EQ(fromJson(k.dump()).slots.post_mixing.trainable_mask, (std::vector<unsigned char>{0, 0, 0, 0}));
  k["slots"]["post_mixing"].erase("trainable");
  EXPECT_EQ(fromJson(k.dump()).slots.post_mixing.trainable_mask, (std::vector<unsigned char>{1, 1, 1, 1}));
  // MTA kernels: one c_q x c_k matrix per head.
  auto mta = makeSpecPreset("mta");
  mta.sizes.H = 2;
  mta.slots.mta.q_kernel = 2, mta.slots.mta.k_kernel = 3;
  mta.slots.mta.post_q_kernel = 1, mta.slots.mta.post_k_kernel = 1;
  mta.slots.mta.kernel_values = {0, 1, 0, 0.5, 0.25, 0, 1, 2, 3, 4, 5, 6};
  mta.slots.mta.post_kernel_values = {0.5, 2};
  ASSERT_TRUE(validate(mta).empty()) << dump(validate(mta));
  const auto mj = nlohmann::json::parse(toJson(mta));
  EXPECT_EQ(mj["slots"]["mta"]["kernel"], nlohmann::json::parse("[[[0,1,0],[0.5,0.25,0]],[[1,2,3],[4,5,6]]]"));
  EXPECT_EQ(mj["slots"]["mta"]["post_kernel"], nlohmann::json::parse("[[[0.5]],[[2]]]"));
  EXPECT_EQ(fromJson(toJson(mta)), mta);
}

TEST(SlotValues, ValuesThatDoNotFitTheSizesReadBackAsWritten) {
  // The reader does not validate (validate() names what is wrong); what it read must write and read
  // back the same whatever the sizes (the spec fuzzer's round trip).
  auto s = talkingHeads(2);
  s.slots.post_mixing = {{1, 2, 3}, {1, 0}};
  s.slots.mta.q_kernel = 1;
  s.slots.mta.k_kernel = 3;
  s.slots.mta.kernel_values = {1, 2, 3, 4, 5};
  s.slots.mta.post_kernel_values = {0.5};
  EXPECT_FALSE(validate(s).empty());
  EXPECT_EQ(fromJson(toJson(s)), s);
}

TEST(SlotValues, BadValuesAreRejectedWithTheirField) {
  auto s = talkingHeads(2);
  s.slots.post_mixing = {{1, 0, 0, 1}, {1, 1, 1, 1}};
  auto j = nlohmann::json::parse(toJson(s));
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto k = j;
    edit(k);
    return issuesOf(k.dump());
  };
  auto i = with([](auto& k) { k["slots"]["post_mix"] = false; });
  EXPECT_TRUE(mentions(i, "slots.post_mixing", "a mixing that is off")) << dump(i);
  i = with([](auto& k) { k["slots"]["post_mixing"]["values"] = nlohmann::json::parse("[1, 0, 1]"); });
  EXPECT_TRUE(mentions(i, "slots.post_mixing.values", "must be H x H = 4 values")) << dump(i);
  i = with([](auto& k) { k["slots"]["post_mixing"]["trainable"] = nlohmann::json::parse("[[1, 2], [0, 1]]"); });
  EXPECT_TRUE(mentions(i, "slots.post_mixing.trainable", "0 (frozen) or 1 (trainable)")) << dump(i);
  i = with([](auto& k) { k["slots"]["post_mixing"]["values"] = nlohmann::json::parse("[[1, 0], [0, 1e39]]"); });
  EXPECT_TRUE(mentions(i, "slots.post_mixing.values", "float32 range")) << dump(i);
  i = with([](auto& k) { k["slots"]["post_mixing"].erase("values"); });
  EXPECT_TRUE(mentions(i, "slots.post_mixing.values", "missing")) << dump(i);
  i = with([](auto& k) { k["slots"]["post_mixing"]["extra"] = 1; });
  EXPECT_FALSE(i.empty()) << "an unknown key is named";
  i = with([](auto& k) { k["slots"]["pre_mixing"] = "identity"; });
  EXPECT_TRUE(mentions(i, "slots.pre_mixing", "must be an object")) << dump(i);
  // A kernel of the wrong size, or of a convolution that is off.
  auto mta = makeSpecPreset("mta");
  mta.sizes.H = 2;
  mta.slots.mta.q_kernel = 1, mta.slots.mta.k_kernel = 2;
  mta.slots.mta.kernel_values = {1, 2, 3};
  auto v = validate(mta);
  EXPECT_TRUE(mentions(v, "slots.mta.kernel", "2 x 1 x 2 = 4 values; got 3")) << dump(v);
  mta.slots.mta.kernel_values.clear();
  mta.slots.mta.post_q_kernel = mta.slots.mta.post_k_kernel = 0;
  mta.slots.mta.post_kernel_values = {1, 1};
  v = validate(mta);
  EXPECT_TRUE(mentions(v, "slots.mta.post_kernel", "which is off")) << dump(v);
  auto mj = nlohmann::json::parse(toJson(makeSpecPreset("mta")));
  mj["slots"]["mta"]["kernel"] = nlohmann::json::parse("[[[1, 2]], [[1]]]");
  EXPECT_TRUE(mentions(issuesOf(mj.dump()), "slots.mta.kernel", "head 1 has 1 values; head 0 has 2"));
}

TEST(SlotValues, FrozenEntriesAreStoredNotTrainedInTheCosts) {
  auto s = talkingHeads(4);
  const auto before = estimateCost(s, 1, 8);
  s.slots.post_mixing = makeMixingPreset("diagonal_only", 4);  // 12 of 16 entries frozen
  const auto after = estimateCost(s, 1, 8);
  EXPECT_EQ(after.parameters, before.parameters - 12);
  EXPECT_EQ(after.frozen_parameters, before.frozen_parameters + 12);
  EXPECT_EQ(after.forward_flops, before.forward_flops) << "a frozen entry still multiplies";
  EXPECT_EQ(parameterCount(s), after.parameters);
}

TEST(SlotValues, StructuralEditsDropValuesThatNoLongerFit) {
  auto s = talkingHeads(2);
  s.slots.post_mixing = makeMixingPreset("swap", 2);
  s.slots.pre_mixing = makeMixingPreset("average", 2);
  auto same = s;
  EXPECT_FALSE(dropStaleSlotValues(same)) << "nothing to drop";
  EXPECT_EQ(same, s);
  auto wider = s;
  wider.sizes.H = 3;
  EXPECT_TRUE(dropStaleSlotValues(wider));
  EXPECT_TRUE(wider.slots.post_mixing.isDefault());
  EXPECT_TRUE(wider.slots.pre_mixing.isDefault());
  EXPECT_TRUE(validate(wider).empty()) << dump(validate(wider));
  auto off = s;
  off.slots.post_mix = false;
  EXPECT_TRUE(dropStaleSlotValues(off));
  EXPECT_TRUE(off.slots.post_mixing.isDefault());
  EXPECT_FALSE(off.slots.pre_mixing.isDefault()) << "the mixing still on keeps its values";
  auto thsa = s;
  thsa.variant = Variant::Thsa;
  thsa.slots = {};  // what a variant change leaves
  EXPECT_FALSE(dropStaleSlotValues(thsa));
  auto mta = makeSpecPreset("mta");
  mta.sizes.H = 2;
  mta.slots.mta.kernel_values = makeMtaKernelPreset("average", mta.slots.mta, 2, false);
  auto resized = mta;
  resized.slots.mta.k_kernel = 9;
  EXPECT_TRUE(dropStaleSlotValues(resized));
  EXPECT_TRUE(resized.slots.mta.kernel_values.empty());
  EXPECT_TRUE(validate(resized).empty()) << dump(validate(resized));
}

TEST(SlotValues, DrawsSlotWeightNamesExactlyTheSlotsWithDrawnValues) {
  auto s = talkingHeads(2);
  for (const char* name : {"mix_pre", "mix_post", "mta_kernel", "mta_kernel_after_sm", "head_kernel", "wq"})
    EXPECT_FALSE(drawsSlotWeight(s, name)) << name << ": nothing is drawn in the preset";
  s.slots.post_mixing = makeMixingPreset("swap", 2);
  EXPECT_TRUE(drawsSlotWeight(s, "mix_post"));
  EXPECT_FALSE(drawsSlotWeight(s, "mix_pre"));
  s.slots.pre_mixing = makeMixingPreset("identity_frozen", 2);
  EXPECT_TRUE(drawsSlotWeight(s, "mix_pre")) << "a frozen identity is drawn: its mask is not the default";
  auto mta = makeSpecPreset("mta");
  mta.sizes.H = 2;
  mta.slots.mta.post_kernel_values = makeMtaKernelPreset("average", mta.slots.mta, 2, true);
  EXPECT_FALSE(drawsSlotWeight(mta, "mta_kernel"));
  EXPECT_TRUE(drawsSlotWeight(mta, "mta_kernel_after_sm"));
  EXPECT_FALSE(drawsSlotWeight(mta, "head_kernel")) << "κ is never drawn";
}
