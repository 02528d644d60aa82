// Private plumbing shared by the ds_config loader files (ds_config_*.cc).
//
// Loading runs in layers (style.md §4.4): each block reader checks types and ranges and fills the
// DsConfig; the batch rule then derives the missing batch sizes as DeepSpeed does; the cross-field
// rules refuse what DeepSpeed refuses; finally the notes explain reroutes and common misreadings.
// `Facts` carries what the rules need but DsConfig does not keep (which keys were written, raw
// optimizer details). Every DeepSpeed refusal quotes DeepSpeed's own message text.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json_reader.h"
#include "zerosim/diagnostic.h"
#include "zerosim/ds_config.h"

namespace zerosim::dsconfig {

/// Raw facts from the JSON that the rules and notes need.
struct Facts {
  std::set<std::string> zero_keys;           ///< canonical names of zero_optimization keys written
  bool amp_enabled = false;                  ///< amp.enabled
  bool legacy_stage1 = false;                ///< zero_optimization.legacy_stage1
  bool optimizer_has_max_grad_norm = false;  ///< optimizer.params.max_grad_norm present
  bool zenflow = false;                      ///< zero_optimization.zenflow set
  bool fp16_block = false;                   ///< an "fp16" object is present
  bool bf16_block = false;                   ///< the bf16 object DeepSpeed reads is present
  std::optional<bool> fp16_enabled_written;  ///< fp16.enabled as written (not "auto")
  std::optional<bool> bf16_enabled_written;  ///< bf16.enabled as written (not "auto")
};

/// State of one load: the config being built, the diagnostics, and the "auto" values.
struct Loader {
  Loader(const AutoValues& a, std::string src, Diagnostics& d)
      : autos(a), source(std::move(src)), diags(d) {}
  const AutoValues& autos;
  std::string source;
  Diagnostics& diags;
  DsConfig cfg;
  Facts facts;

  /// A one-line note in DsConfig::notes.
  void note(std::string text) { cfg.notes.push_back(std::move(text)); }
  /// An error for a combination DeepSpeed refuses: `deepspeed_message` is DeepSpeed's text,
  /// `where` the DeepSpeed file that raises it (shown as the hint).
  void refuse(const std::string& pointer, const std::string& deepspeed_message,
              const std::string& where) {
    diags.error(source, pointer, "DeepSpeed refuses this config: " + deepspeed_message, where);
  }
};

/// If `key` holds "auto" inside a block DeepSpeed parses with DeepSpeedConfigModel (which drops
/// "auto" entries, config_utils.py), marks it used, notes that the default `default_text` stays,
/// and returns true.
bool auto_keeps_default(json::JsonReader& r, std::string_view key, const std::string& default_text,
                        Loader& ld);

/// The "needs a value" error for an "auto" entry nothing resolves; `what` names the flag.
void auto_needs_value(json::JsonReader& r, std::string_view key, const std::string& what);

// Typed reads of one field of a pydantic block: absent leaves `dst`; "auto" keeps it (noted);
// a wrong type or range is an error and leaves it. Return true when a value was written.
bool read_bool(json::JsonReader& r, std::string_view key, bool& dst, Loader& ld);
bool read_uint(json::JsonReader& r, std::string_view key, std::uint64_t& dst, std::uint64_t lo,
               Loader& ld);
bool read_int(json::JsonReader& r, std::string_view key, std::int64_t& dst, Loader& ld);
bool read_number(json::JsonReader& r, std::string_view key, double& dst, double lo, double hi,
                 Loader& ld);
/// The value of `c` as a 64-bit signed integer (integral floats such as 5e8 accepted); otherwise
/// the error "expected an integer, got ..." and nullopt.
std::optional<std::int64_t> as_any_int(json::JsonReader& c);
/// Type-checks an optional sub-object zerosim accepts but does not model (null allowed).
void accept_object(json::JsonReader& r, std::string_view key);

// Block readers, each in its own file.
void read_zero(json::JsonReader& root, Loader& ld);       ///< ds_config_zero.cc
void read_precision(json::JsonReader& root, Loader& ld);  ///< ds_config_precision.cc
void read_batch(json::JsonReader& root, Loader& ld);      ///< ds_config_batch.cc
void apply_rules(Loader& ld);                             ///< ds_config_rules.cc
void add_notes(Loader& ld);                               ///< ds_config_notes.cc

// Key tables (ds_config_keys.cc).
/// Every top-level key DeepSpeed reads (runtime/constants.py, runtime/config.py and the block
/// configs).
const std::vector<std::string>& known_top_level_keys();
/// Top-level keys zerosim models (everything else known goes to DsConfig::not_modelled).
const std::vector<std::string>& modelled_top_level_keys();
/// Field names, aliases and deprecated names of DeepSpeedZeroConfig.
const std::vector<std::string>& zero_keys();
const std::vector<std::string>& offload_param_keys();
const std::vector<std::string>& offload_optimizer_keys();
const std::vector<std::string>& fp16_keys();
const std::vector<std::string>& bf16_keys();
const std::vector<std::string>& data_types_keys();
/// The keys of a block that DeepSpeed v0.14.4 does not have (added later): zero_optimization's
/// and offload_optimizer's (pydantic, extra="forbid": refused there), bf16's (read as a dict:
/// ignored there). `block` is "zero_optimization", "offload_optimizer" or "bf16".
const std::vector<std::string>& keys_after_v0_14_4(std::string_view block);
/// At v0.14.4, refuses each key of `r` that keys_after_v0_14_4(block) names, as its pydantic
/// model does (the key is marked used, so reject_unknown does not report it again).
void refuse_keys_after_v0_14_4(json::JsonReader& r, std::string_view block, const Loader& ld);
/// True when DeepSpeed builds an optimizer of this `optimizer.type` (its own list, compared in
/// lower case, or a torch.optim class name, compared exactly).
bool is_supported_optimizer(const std::string& type);

/// "torch.bfloat16" style name used in DeepSpeed's messages.
std::string torch_dtype(DType t);

}  // namespace zerosim::dsconfig
