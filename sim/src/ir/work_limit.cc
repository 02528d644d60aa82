// The schedule work limit (work_limit.h): checked multiplication of the three counts, compared
// with the documented limit or its environment override.
#include "zerosim/work_limit.h"

#include <cstdlib>
#include <string>

namespace zerosim {

std::uint64_t max_schedule_work(Diagnostics& diags) {
  const char* env = std::getenv(kMaxScheduleWorkEnv);
  if (env == nullptr) return kDefaultMaxScheduleWork;
  const std::string text(env);
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  const std::uint64_t v = ok ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (v == 0) {
    diags.error(kMaxScheduleWorkEnv, "",
                "expected an integer >= 1 (steps x micro-steps x tensors), got " + quote(text));
  }
  return v;
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
