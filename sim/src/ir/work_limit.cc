// The schedule work limit (work_limit.h): checked multiplication of the three counts, compared
// with the documented limit or its environment override.
#include "zerosim/work_limit.h"

#include <cstdlib>
#include <string>

namespace zerosim {

namespace {

// The limit in `name` (an integer >= 1) when set, else `fallback`; 0 after an error.
std::uint64_t limit_from_env(const char* name, std::uint64_t fallback, const char* what,
                             Diagnostics& diags) {
  const char* env = std::getenv(name);
  if (env == nullptr) return fallback;
  const std::string text(env);
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  const std::uint64_t v = ok ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (v == 0)
    diags.error(name, "",
                "expected an integer >= 1 (" + std::string(what) + "), got " + quote(text));
  return v;
}

}  // namespace

std::uint64_t max_schedule_work(Diagnostics& diags) {
  return limit_from_env(kMaxScheduleWorkEnv, kDefaultMaxScheduleWork,
                        "steps x micro-steps x tensors", diags);
}

std::uint64_t max_role_table(Diagnostics& diags) {
  return limit_from_env(kMaxRoleTableEnv, kDefaultMaxRoleTable,
                        "ranks with distinct partitions x size slots", diags);
}

bool check_role_table(std::uint64_t segments, std::uint64_t slots, std::uint64_t world,
                      Diagnostics& diags, bool lower_bound) {
  const std::uint64_t limit = max_role_table(diags);
  if (limit == 0) return false;
  std::uint64_t product = 0;
  const bool wraps = __builtin_mul_overflow(segments, slots, &product);
  if (!wraps && product <= limit) return true;
  diags.error("--gpus", "",
              "expected ranks with distinct partitions x size slots <= " + std::to_string(limit) +
                  " (the role-table limit of a stage 0-2 schedule; " + kMaxRoleTableEnv +
                  " raises it), got " + (lower_bound ? "at least " : "") +
                  std::to_string(segments) + " x " + std::to_string(slots) + " = " +
                  (wraps ? std::string("more than 2^64") : std::to_string(product)) + " at " +
                  std::to_string(world) +
                  " GPUs; fewer GPUs or fewer, larger tensors "
                  "shrink it");
  return false;
}

bool check_schedule_work(std::uint64_t steps, std::uint64_t micro_steps, std::uint64_t tensors,
                         const std::string& source, Diagnostics& diags) {
  const std::uint64_t limit = max_schedule_work(diags);
  if (limit == 0) return false;
  std::uint64_t sm = 0, product = 0;
  const bool wraps = __builtin_mul_overflow(steps, micro_steps, &sm) ||
                     __builtin_mul_overflow(sm, tensors, &product);
  if (!wraps && product <= limit) return true;
  diags.error(source, "",
              "expected steps x micro-steps x tensors <= " + std::to_string(limit) +
                  " (the work limit; " + kMaxScheduleWorkEnv + " raises it), got " +
                  std::to_string(steps) + " x " + std::to_string(micro_steps) + " x " +
                  std::to_string(tensors) + " = " +
                  (wraps ? std::string("more than 2^64") : std::to_string(product)));
  return false;
}

}  // namespace zerosim
