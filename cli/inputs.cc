// Resolving model, cluster, ds_config and training settings from flags. Precedence: the ds_config's
// explicit values win; flags resolve its "auto" entries; a flag that contradicts an explicit value
// is an error rather than a silent override.
#include "inputs.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>

#include "cluster_flags.h"
#include "lora_flags.h"
#include "trainer_inputs.h"
#include "zerosim/model_loader.h"

namespace zerosim::cli {

std::vector<FlagSpec> model_cluster_flags() {
  std::vector<FlagSpec> f = {
      {"--model", "NAME", "zoo model (see `zerosim models`); default: llama2-7b"},
      {"--hf-config", "FILE", "Hugging Face config.json, or a model directory holding one"},
      {"--params", "N", "raw parameter count, e.g. 13e9, 7B or 1.3b (synthetic GPT-style model)"},
      {"--param-list", "FILE",
       "param list JSON {\"params\": [[name, [shape]]...], \"grad_order\": [...]}"},
      {"--grad-order", "FILE",
       "a recorded gradient order ({\"grad_order\": [...]} or zerosim_record's params.rankR.json) "
       "instead of the derived one"},
      {"--z3-leaf-modules", "CLASS,...",
       "module classes stage 3 fetches as one unit with their descendants "
       "(set_z3_leaf_modules), or none; default: the MoE blocks LLaMA-Factory marks "
       "(MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock)"},
      {"--gpus", "N", "total GPUs (data-parallel ranks); default 8"},
      {"--nodes", "N", "nodes (with --gpus-per-node)"},
      {"--gpus-per-node", "N", "GPUs per node; default 8"},
      {"--gpu", "NAME", "GPU type from the catalog; default H100-SXM-80GB"},
      {"--ds-config", "FILE", "DeepSpeed ds_config.json"},
      trainer_config_flag(),
      {"--micro-batch", "N", "micro-batch per GPU; default 1 (or the ds_config's)"},
      {"--grad-accum", "N", "gradient accumulation steps; default 1 (or the ds_config's)"},
      {"--seq-len", "N", "sequence length in tokens; default min(4096, model context)"},
      {"--precision", "P",
       "fp16|bf16|fp32 (or bfloat16, float16, half, float32, torch.<dtype>) when no ds_config "
       "says; default bf16"},
      {"--gradient-clipping", "X", "resolves \"auto\" gradient_clipping"},
      {"--activation-checkpointing", "", "full activation checkpointing of every block"},
      {"--attention", "KIND", "flash|eager: eager stores attention scores; default flash"},
  };
  for (auto& l : lora_flag_specs()) f.push_back(l);
  for (auto& c : cluster_link_flags()) f.push_back(c);
  return f;
}

namespace {

// --params: a number with an optional K/M/B/T suffix (7B, 1.3b, 70e9, 175000000000).
Result<double> parse_param_count(const std::string& text) {
  static constexpr std::pair<char, double> kSuffixes[] = {
      {'k', 1e3}, {'m', 1e6}, {'b', 1e9}, {'t', 1e12}};
  std::string number = text;
  double scale = 1;
  if (!number.empty()) {
    const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(number.back())));
    for (const auto& [suffix, value] : kSuffixes)
      if (last == suffix) {
        number.pop_back();
        scale = value;
      }
  }
  auto n = parse_number("--params", number, -1e300, 1e300);
  if (!n.ok() || number.empty())
    return fail<double>("--params", "",
                        "expected a parameter count such as 7e9, 7B or 1.3B, got " + quote(text));
  return n.value() * scale;
}

// --precision: DeepSpeed's and torch's dtype names as well as fp16|bf16|fp32, any case.
Result<std::string> parse_precision(const std::string& text) {
  const auto t = parse_dtype(text);
  if (t == DType::Float16) return std::string("fp16");
  if (t == DType::BFloat16) return std::string("bf16");
  if (t == DType::Float32) return std::string("fp32");
  return parse_choice("--precision", text, {"fp16", "bf16", "fp32"});
}

Result<ModelDesc> load_model(const ParsedArgs& a, const TrainerConfig* trainer,
                             std::vector<std::string>& notes, bool& used_default) {
  std::vector<std::string> given;
  for (const char* f : {"--model", "--hf-config", "--params", "--param-list"})
    if (a.has(f)) given.push_back(f);
  if (trainer && trainer->model) {
    if (given.empty()) return *trainer_model(*trainer);
    // A model flag plans another model with the same training setup (the file's may be a local
    // path or a checkpoint the zoo does not hold).
    notes.push_back(given[0] + " " + *a.get(given[0]) + " replaces " + trainer->model->where + " " +
                    trainer->model->key + " " + quote(trainer->model->value));
  }
  if (given.size() > 1)
    return fail<ModelDesc>("zerosim", "",
                           "give one of --model, --hf-config, --params, --param-list (got " +
                               given[0] + " and " + given[1] + ")");
  if (a.has("--hf-config")) return load_hf_config_file(*a.get("--hf-config"));
  if (a.has("--param-list")) return load_param_list_file(*a.get("--param-list"));
  if (a.has("--params")) {
    auto n = parse_param_count(*a.get("--params"));
    if (!n.ok()) return Result<ModelDesc>(n.diagnostics());
    return synthetic_model(n.value(), "--params");
  }
  used_default = !a.has("--model");
  return load_zoo_model(a.get("--model").value_or(kDefaultModel));
}

std::optional<std::uint64_t> uint_flag(const ParsedArgs& a, const std::string& f, std::uint64_t lo,
                                       std::uint64_t hi, Diagnostics& d) {
  if (!a.has(f)) return std::nullopt;
  auto r = parse_uint(f, *a.get(f), lo, hi);
  if (!r.ok()) {
    d.append(r.diagnostics());
    return std::nullopt;
  }
  return r.value();
}

bool resolve_cluster(const ParsedArgs& a, Cluster& c, Diagnostics& d) {
  auto gpus = uint_flag(a, "--gpus", 1, kMaxGpus, d);
  auto nodes = uint_flag(a, "--nodes", 1, kMaxGpus, d);
  auto per_node = uint_flag(a, "--gpus-per-node", 1, 1024, d);
  if (d.has_errors()) return false;
  c.gpus_per_node = per_node.value_or(8);
  if (nodes) {
    c.nodes = *nodes;
    if (c.nodes * c.gpus_per_node > kMaxGpus) {
      d.error("--nodes", "",
              "expected at most " + std::to_string(kMaxGpus) + " GPUs in total, got " +
                  std::to_string(c.nodes) + " x " + std::to_string(c.gpus_per_node));
      return false;
    }
    if (gpus && *gpus != c.world_size()) {
      d.error("--gpus", "",
              "expected " + std::to_string(c.world_size()) + " (--nodes x --gpus-per-node), got " +
                  std::to_string(*gpus));
      return false;
    }
    return true;
  }
  std::uint64_t n = gpus.value_or(kDefaultGpus);
  // Fewer GPUs than a node holds: one node, using that many of them, whether or not
  // --gpus-per-node was given (--gpus 2 --gpus-per-node 8 was refused as "not a single node",
  // while --gpus 2 alone planned it; found by a new-user pass).
  if (n <= c.gpus_per_node) {
    c.nodes = 1;
    c.gpus_per_node = n;
  } else if (n % c.gpus_per_node == 0) {
    c.nodes = n / c.gpus_per_node;
  } else {
    d.error("--gpus", "",
            "expected a multiple of --gpus-per-node (" + std::to_string(c.gpus_per_node) +
                "), got " + std::to_string(n));
    return false;
  }
  return true;
}

void check_conflict(const ParsedArgs& a, const std::string& flag, std::uint64_t resolved,
                    const std::string& key, const std::string& file, Diagnostics& d) {
  if (!a.has(flag)) return;
  auto v = parse_uint(flag, *a.get(flag), 1, UINT64_MAX);
  if (v.ok() && v.value() != resolved)
    d.error(flag, "",
            "conflicts with " + file + " " + key + " = " + std::to_string(resolved) + " (got " +
                *a.get(flag) + "); change one of them");
}

}  // namespace

Result<Inputs> load_inputs(const ParsedArgs& a) {
  Inputs in;
  Diagnostics d;
  const auto trainer = load_trainer_flag(a, d);
  if (d.has_errors()) return Result<Inputs>(d);
  std::vector<std::string> notes;
  auto model = load_model(a, trainer ? &*trainer : nullptr, notes, in.used_default_model);
  if (!model.ok()) d.append(model.diagnostics());
  auto gpu = find_gpu(a.get("--gpu").value_or(kDefaultGpu), "--gpu");
  if (!gpu.ok()) d.append(gpu.diagnostics());
  resolve_cluster(a, in.cluster, d);
  auto micro = uint_flag(a, "--micro-batch", 1, kMaxMicroBatch, d);
  auto gas = uint_flag(a, "--grad-accum", 1, kMaxGradAccumSteps, d);
  auto seq = uint_flag(a, "--seq-len", 1, 1u << 24, d);
  std::optional<DType> precision;
  if (a.has("--precision")) {
    auto p = parse_precision(*a.get("--precision"));
    if (p.ok())
      precision = parse_dtype(p.value());
    else
      d.append(p.diagnostics());
  }
  std::optional<double> clip;
  if (a.has("--gradient-clipping")) {
    auto c = parse_number("--gradient-clipping", *a.get("--gradient-clipping"), 0, 1e9);
    if (c.ok())
      clip = c.value();
    else
      d.append(c.diagnostics());
  }
  std::string attention = "flash";
  if (a.has("--attention")) {
    auto c = parse_choice("--attention", *a.get("--attention"), {"flash", "eager"});
    if (c.ok())
      attention = c.value();
    else
      d.append(c.diagnostics());
  }
  // Whose rules resolve the ds_config (DsConfig::version): parsed here, before it is loaded.
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
  if (a.has("--deepspeed-version")) {
    auto v = parse_deepspeed_version_flag(*a.get("--deepspeed-version"));
    if (v.ok())
      version = v.value();
    else
      d.append(v.diagnostics());
  }
  if (d.has_errors()) return Result<Inputs>(d);
  in.model = std::move(model.value());
  in.cluster.gpu = gpu.value();
  in.links_basis = apply_cluster_link_flags(a, in.cluster, d);
  if (d.has_errors()) return Result<Inputs>(d);

  ResolvedTraining rt;
  if (!resolve_training(a, trainer ? &*trainer : nullptr, in.cluster.gpu, micro, gas, precision,
                        clip, seq, rt, d))
    return Result<Inputs>(d);
  if (!resolve_attention(a, trainer ? &*trainer : nullptr, attention, rt.notes, d))
    return Result<Inputs>(d);
  AutoValues autos = rt.autos;
  autos.version = version;
  autos.world_size = in.cluster.world_size();
  if (in.model.arch) autos.hidden_size = in.model.arch->hidden;
  if (rt.ds_config) {
    const std::string file = *rt.ds_config;
    auto ds = load_ds_config_file(file, autos);
    d.append(ds.diagnostics());
    if (!ds.ok()) return Result<Inputs>(d);
    in.ds = std::move(ds.value());
    in.ds_config_given = true;
    check_conflict(a, "--micro-batch", in.ds.micro_batch, "/train_micro_batch_size_per_gpu", file,
                   d);
    check_conflict(a, "--grad-accum", in.ds.grad_accum_steps, "/gradient_accumulation_steps", file,
                   d);
  } else {
    in.ds = default_ds_config(0, autos.precision.value_or(DType::BFloat16), version);
    if (autos.gradient_clipping)  // as a ds_config's "gradient_clipping" would say
      in.ds.gradient_clipping = *autos.gradient_clipping;
    in.ds.micro_batch = autos.micro_batch.value_or(1);
    in.ds.grad_accum_steps = autos.grad_accum_steps.value_or(1);
    in.ds.train_batch_size = in.ds.micro_batch * in.ds.grad_accum_steps * in.cluster.world_size();
  }
  // A GPU without bfloat16 (Volta and older; the Trainer refuses bf16 there too): one line naming
  // what chose bf16, instead of the simulator's "/gpu: expected a dense bfloat16 rate".
  if (in.ds.lp_dtype() == DType::BFloat16 && in.cluster.gpu.bf16_tflops <= 0) {
    const std::string source = a.has("--precision") ? "--precision"
                               : rt.ds_config       ? *rt.ds_config
                                                    : "--gpu";
    d.error(source, "",
            in.cluster.gpu.name + " has no bfloat16; expected --precision fp16 or fp32, got bf16" +
                (a.has("--precision") || rt.ds_config ? "" : " (the default precision)"));
    return Result<Inputs>(d);
  }
  // After the ds_config: packed 4-bit storage is counted in its LP dtype.
  if (trainer) {
    if (!apply_trainer_lora(a, *trainer, in.model, in.ds.lp_dtype(), rt.notes, d))
      return Result<Inputs>(d);
  } else if (!apply_lora_flags(a, in.model, in.ds.lp_dtype(), d)) {
    return Result<Inputs>(d);
  }
  // After LoRA: a recording of a LoRA job names the adapters' params too.
  if (a.has("--grad-order")) {
    d.append(apply_recorded_grad_order(in.model, *a.get("--grad-order")));
    if (d.has_errors()) return Result<Inputs>(d);
  }
  if (a.has("--z3-leaf-modules")) {
    d.append(set_z3_leaf_modules(in.model, *a.get("--z3-leaf-modules")));
    if (d.has_errors()) return Result<Inputs>(d);
  }
  // Where each value came from, first: the report shows them with the ds_config's notes.
  if (trainer)
    notes.insert(notes.begin(), "trainer config " + trainer->path + " (" +
                                    trainer_format_name(trainer->format) + ")");
  notes.insert(notes.end(), rt.notes.begin(), rt.notes.end());
  in.ds.notes.insert(in.ds.notes.begin(), notes.begin(), notes.end());
  in.training.micro_batch = in.ds.micro_batch;
  std::uint64_t ctx = in.model.arch && in.model.arch->max_seq ? in.model.arch->max_seq : 4096;
  in.training.seq_len = rt.seq_len.value_or(std::min<std::uint64_t>(4096, ctx));
  // A learned position table (GPT-2's wpe, BERT's position_embeddings, OPT's embed_positions)
  // has a row per position: Hugging Face fails with an index error past it, so such a run does not
  // exist. (Rotary models run past their context length; that is the model's quality question.)
  // Only for --seq-len: a trainer's cutoff_len is a maximum that shorter samples never reach.
  if (a.has("--seq-len") && in.model.arch && in.model.arch->max_seq > 0 &&
      in.training.seq_len > in.model.arch->max_seq) {
    const bool learned =
        std::any_of(in.model.params.begin(), in.model.params.end(), [](const ParamTensor& p) {
          for (const char* t :
               {"wpe.weight", "position_embeddings.weight", "embed_positions.weight"})
            if (p.name.size() >= std::strlen(t) &&
                p.name.compare(p.name.size() - std::strlen(t), std::string::npos, t) == 0)
              return true;
          return false;
        });
    if (learned) {
      d.error("--seq-len", "",
              "expected at most " + std::to_string(in.model.arch->max_seq) + " tokens (" +
                  in.model.name + "'s learned position table; Hugging Face fails past it), got " +
                  std::to_string(in.training.seq_len));
      return Result<Inputs>(d);
    }
  }
  in.training.activation_checkpointing = rt.activation_checkpointing;
  in.training.flash_attention = attention == "flash";
  // transformers builds a quantized base outside zero.Init: zerosim refuses --zero-init there.
  if (trainer && quantized_base_problem(in.model, 3, true).empty()) {
    in.trainer_zero_init = true;
    in.trainer_zero_init_note = trainer_zero_init_note(*trainer);
  }
  if (d.has_errors()) return Result<Inputs>(d);
  // Only for a run that goes ahead: a refused one says its one line.
  if (trainer)
    for (const auto& n : trainer->not_modelled)
      d.warning(trainer->path, "", n + " changes memory or time and is not modelled");
  // LLaMA-Factory without bf16/fp16 still loads the model in the checkpoint's 16-bit dtype
  // (hparams/parser.py:640 leaves compute_dtype unset, model/patcher.py:379 infers it) and an
  // adapter run keeps its frozen base there; zerosim holds every weight in the training dtype
  // (found by a new-user pass). A full fine-tune has no frozen base; --precision is the user's.
  if (trainer && trainer->format == TrainerFormat::LlamaFactory && trainer->lora &&
      trainer->lora->value && in.ds.lp_dtype() == DType::Float32 && !a.has("--precision"))
    d.warning(trainer->path, "",
              "fp32 training: LLaMA-Factory loads the frozen base in the checkpoint's 16-bit "
              "dtype (model/patcher.py:379 infer_optim_dtype), zerosim plans it in fp32: its "
              "memory is an upper bound (2x)");
  return Result<Inputs>(std::move(in), d);
}

}  // namespace zerosim::cli
