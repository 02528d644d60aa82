// The stage 3 walk's backward interleaving of gradient-ready events and module pre-backward fetches
// equals what autograd did on tiny replicas of the zoo families (tests/recorder/zoo_replicas.py
// recorded tests/data/recordings/grad_order/<family>.json with tools/zerosim_record and Debian's
// torch: its "backward" list is the recorder's pre-backward and gradient hooks in firing order).
// DeepSpeed stage 3 issues a module's backward all-gather in its pre-backward hook
// (parameter_offload.py, pre_sub_module_backward_function -> fetch_sub_module) and reduces a full
// IPG bucket inside the gradient hook of the param that does not fit (stage3.py,
// reduce_independent_p_g_buckets_and_remove_grads), so this order is the order of those
// collectives.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "schedule/stage3_internal.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using Events = std::vector<std::string>;

struct Recorded {
  std::string torch;
  std::string hf_config;
  Events backward;
};

Recorded load(const std::string& family) {
  std::ifstream f(std::string(ZEROSIM_TEST_DATA_DIR) + "/recordings/grad_order/" + family +
                  ".json");
  const auto j = nlohmann::json::parse(f);
  return {j.at("torch").get<std::string>(), j.at("hf_config").dump(),
          j.at("backward").get<Events>()};
}

// The walk's backward as the recorder writes it: "pre_backward NAME" for each backward FETCH of a
// module (the root is "" in named_modules()), "grad NAME" for each GradReady. Modules the replica
// lacks are left out (`replica` holds the recorded module names).
Events walk_backward(const ModelDesc& m, const schedule::s3::Walk& w,
                     const std::set<std::string>& replica) {
  using schedule::s3::HookKind;
  Events out;
  for (const auto& ev : w.events) {
    if (!ev.backward) continue;
    if (ev.kind == HookKind::Fetch && replica.count(m.modules[ev.index].name) > 0)
      out.push_back("pre_backward " + m.modules[ev.index].name);
    else if (ev.kind == HookKind::GradReady)
      out.push_back("grad " + m.params[ev.index].name);
  }
  return out;
}

class RecordedInterleaving : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedInterleaving, WalkFollowsTheRecordedHookOrder) {
  const Recorded rec = load(GetParam());
  auto m = load_hf_config_text(rec.hf_config, GetParam() + " replica");
  ASSERT_TRUE(m.ok()) << m.diagnostics().to_string();
  ASSERT_FALSE(m->modules.empty());
  std::set<std::string> replica;
  const std::string pre = "pre_backward ";
  for (const auto& e : rec.backward)
    if (e.rfind(pre, 0) == 0) replica.insert(e.substr(pre.size()));
  // Every module the replica ran a pre-backward for is one zerosim models, by the same name.
  std::set<std::string> modelled;
  for (const auto& node : m->modules) modelled.insert(node.name);
  for (const auto& name : replica) EXPECT_EQ(modelled.count(name), 1u) << name;
  auto w = schedule::s3::build_walk(m.value(), false);
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  EXPECT_EQ(walk_backward(m.value(), w.value(), replica), rec.backward)
      << "recorded with torch " << rec.torch;
}

INSTANTIATE_TEST_SUITE_P(Families, RecordedInterleaving, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace zerosim
