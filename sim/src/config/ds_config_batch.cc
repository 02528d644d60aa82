// The batch-size rule: DeepSpeedConfig._set_batch_related_parameters and _batch_assertion
// (deepspeed/runtime/config.py), with Hugging Face's "auto" rules in front of it.
//
// train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps may each be a
// number, null (Python None), "auto" (HF fills micro batch and GAS from its arguments and
// train_batch_size = world * micro * GAS), or absent (then --micro-batch / --grad-accum fill it
// when given). DeepSpeed then derives the missing ones with Python's floor division and asserts
// train_batch_size == micro * GAS * world_size; the messages are DeepSpeed's.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "config/ds_config_internal.h"

namespace zerosim::dsconfig {
namespace {

using json::JsonReader;
using I64 = std::int64_t;

constexpr const char* kConfigFile = "deepspeed/runtime/config.py";

struct BatchKeys {
  std::optional<I64> train, micro, gas;
  bool failed = false;  ///< an "auto" could not be resolved (already reported)
};

/// One of micro batch / GAS: a number, null, "auto" (from `flag_value`), or absent (from
/// `flag_value`).
std::optional<I64> read_key(JsonReader& root, const std::string& key,
                            const std::optional<std::uint64_t>& flag_value, const std::string& flag,
                            Loader& ld, bool& failed) {
  const auto from_flag = [&]() -> std::optional<I64> {
    if (!flag_value || *flag_value > static_cast<std::uint64_t>(std::numeric_limits<I64>::max()))
      return std::nullopt;
    return static_cast<I64>(*flag_value);
  };
  if (!root.has(key)) {
    auto v = from_flag();
    if (v)
      ld.note(key + " is not in the config: taken from " + flag + " (" + std::to_string(*v) + ")");
    return v;
  }
  if (root.value().at(key).is_null()) {
    root.mark_used(key);
    return std::nullopt;
  }
  if (root.is_auto(key)) {
    auto v = from_flag();
    if (v) {
      root.mark_used(key);
    } else {
      auto_needs_value(root, key, flag);
      failed = true;
    }
    return v;
  }
  // A written number wins, as in DeepSpeed; whether a different flag is a conflict is the caller's
  // policy (the CLI reports it), so no diagnostic here.
  auto c = root.child(key);
  auto v = as_any_int(*c);
  if (!v) failed = true;
  return v;
}

/// Python's a // b for b != 0.
I64 floordiv(I64 a, I64 b) {
  if (a == std::numeric_limits<I64>::min() && b == -1) return std::numeric_limits<I64>::max();
  I64 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::optional<I64> mul3(I64 a, I64 b, I64 c) {
  I64 ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return std::nullopt;
  return abc;
}

BatchKeys read_keys(JsonReader& root, I64 world, Loader& ld) {
  BatchKeys k;
  k.micro = read_key(root, "train_micro_batch_size_per_gpu", ld.autos.micro_batch, "--micro-batch",
                     ld, k.failed);
  k.gas = read_key(root, "gradient_accumulation_steps", ld.autos.grad_accum_steps, "--grad-accum",
                   ld, k.failed);
  const std::string tb = "train_batch_size";
  if (!root.has(tb)) return k;
  if (root.value().at(tb).is_null()) {
    root.mark_used(tb);
  } else if (root.is_auto(tb)) {
    // HF: world_size * per_device_train_batch_size * gradient_accumulation_steps (its GAS default
    // is 1).
    root.mark_used(tb);
    if (k.failed) return k;
    if (!k.micro) {
      auto_needs_value(root, tb, "--micro-batch");
      k.failed = true;
      return k;
    }
    k.train = mul3(*k.micro, k.gas.value_or(1), world);
    if (!k.train) {
      root.error("is \"auto\" and micro batch * GAS * world size overflows 64 bits", tb);
      k.failed = true;
    }
  } else {
    auto c = root.child(tb);
    k.train = as_any_int(*c);
    if (!k.train) k.failed = true;
  }
  return k;
}

/// _set_batch_related_parameters, branch by branch; false when it cannot produce all three.
bool derive(BatchKeys& k, I64 world, JsonReader& root, Loader& ld) {
  auto& train = k.train;
  auto& micro = k.micro;
  auto& gas = k.gas;
  const auto zero_division = [&](const std::string& pointer) {
    ld.refuse(pointer, "integer division or modulo by zero", kConfigFile);
    return false;
  };
  const auto overflow = [&] {
    root.error("micro batch * GAS * world size overflows 64 bits",
               "train_micro_batch_size_per_gpu");
    return false;
  };
  if (train && micro && gas) return true;
  if (train && micro) {
    if (*micro == 0) return zero_division("/train_micro_batch_size_per_gpu");
    gas = floordiv(floordiv(*train, *micro), world);
  } else if (train && gas) {
    if (*gas == 0) return zero_division("/gradient_accumulation_steps");
    micro = floordiv(floordiv(*train, world), *gas);
  } else if (micro && gas) {
    train = mul3(*micro, *gas, world);
    if (!train) return overflow();
  } else if (train) {
    gas = 1;
    micro = floordiv(*train, world);
  } else if (micro) {
    gas = 1;
    train = mul3(*micro, 1, world);
    if (!train) return overflow();
  } else {
    ld.diags.error(ld.source, "/",
                   "DeepSpeed refuses this config: Either train_batch_size or "
                   "train_micro_batch_size_per_gpu needs to be provided",
                   "pass --micro-batch");
    return false;
  }
  return true;
}

/// Which of the three counts the file (or a flag filling its "auto") gave.
struct Given {
  bool train = false, micro = false, gas = false;
};

/// _batch_assertion, in DeepSpeed's order; true when all hold. A derived count is refused at the
/// key it was derived from (a pointer into the file), with the derivation shown.
bool assert_batch(I64 train, I64 micro, I64 gas, I64 world, Given given, Loader& ld) {
  const std::string w = std::to_string(world);
  const auto gt0 = [&](const std::string& pointer, const std::string& what, I64 v,
                       const std::string& derived) {
    ld.refuse(pointer,
              what + ": " + std::to_string(v) + " has to be greater than 0" +
                  (derived.empty() ? std::string() : " (" + derived + ")"),
              kConfigFile);
    return false;
  };
  if (train <= 0) {
    if (given.train) return gt0("/train_batch_size", "Train batch size", train, "");
    // Derived as micro x GAS x world: the factor that made it so.
    const bool by_gas = given.gas && gas <= 0;
    return gt0(by_gas ? "/gradient_accumulation_steps" : "/train_micro_batch_size_per_gpu",
               "Train batch size", train,
               "train_batch_size derived as train_micro_batch_size_per_gpu x "
               "gradient_accumulation_steps x world size = " +
                   std::to_string(micro) + " x " + std::to_string(gas) + " x " + w);
  }
  // A derived micro batch or GAS comes from train_batch_size (// is Python's floor division).
  if (micro <= 0)
    return gt0(given.micro ? "/train_micro_batch_size_per_gpu" : "/train_batch_size",
               "Micro batch size per gpu", micro,
               given.micro ? ""
                           : "train_micro_batch_size_per_gpu derived as train_batch_size // "
                             "world size // gradient_accumulation_steps = " +
                                 std::to_string(train) + " // " + w + " // " + std::to_string(gas));
  if (gas <= 0)
    return gt0(given.gas ? "/gradient_accumulation_steps" : "/train_batch_size",
               "Gradient accumulation steps", gas,
               given.gas ? ""
                         : "gradient_accumulation_steps derived as train_batch_size // "
                           "train_micro_batch_size_per_gpu // world size = " +
                               std::to_string(train) + " // " + std::to_string(micro) + " // " + w);
  auto product = mul3(micro, gas, world);
  if (product && *product == train) return true;
  ld.refuse("/train_batch_size",
            "Check batch related parameters. train_batch_size is not equal to "
            "micro_batch_per_gpu * gradient_acc_step * world_size " +
                std::to_string(train) + " != " + std::to_string(micro) + " * " +
                std::to_string(gas) + " * " + std::to_string(world),
            kConfigFile);
  return false;
}

}  // namespace

void read_batch(JsonReader& root, Loader& ld) {
  const I64 world =
      ld.autos.world_size > static_cast<std::uint64_t>(std::numeric_limits<I64>::max())
          ? std::numeric_limits<I64>::max()
          : static_cast<I64>(ld.autos.world_size);
  BatchKeys k = read_keys(root, world, ld);
  const bool micro_given = k.micro.has_value(), gas_given = k.gas.has_value();
  const Given counts_given{k.train.has_value(), micro_given, gas_given};
  if (k.failed || !derive(k, world, root, ld)) return;
  if (!assert_batch(*k.train, *k.micro, *k.gas, world, counts_given, ld)) return;
  // The CLI's limits hold however a count was obtained: written, or derived from train_batch_size
  // (which would otherwise ask for 2^40 micro-steps per step with every flag in range).
  bool in_limits = true;
  const auto limit = [&](I64 v, std::uint64_t max, bool given, const std::string& key,
                         const std::string& flag) {
    if (static_cast<std::uint64_t>(v) <= max) return;
    in_limits = false;
    const std::string expected =
        "expected at most " + std::to_string(max) + " (zerosim's limit, as for " + flag + ")";
    if (given)
      root.error(expected + ", got " + std::to_string(v), key);
    else
      root.error("derives " + key + " = " + std::to_string(v) + "; " + expected,
                 "train_batch_size");
  };
  limit(*k.micro, kMaxMicroBatch, micro_given, "train_micro_batch_size_per_gpu", "--micro-batch");
  limit(*k.gas, kMaxGradAccumSteps, gas_given, "gradient_accumulation_steps", "--grad-accum");
  if (!in_limits) return;
  ld.cfg.train_batch_size = static_cast<std::uint64_t>(*k.train);
  ld.cfg.micro_batch = static_cast<std::uint64_t>(*k.micro);
  ld.cfg.grad_accum_steps = static_cast<std::uint64_t>(*k.gas);
}

}  // namespace zerosim::dsconfig
