// fit_calibration (calibration.h): compute efficiency, host costs and collective alpha-beta lines
// from measured traces. The model it inverts is the engine's (engine.h): a compute op takes
// max(flops / rate, host time), host time = K × kernel launch / pieces (+ the stage-3 hooks), and a
// collective takes alpha + S × factor / busBw plus the host's launch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zerosim/calibration.h"

namespace zerosim {
namespace {

std::string g3(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double dense_tflops(const GpuSpec& gpu, DType lp) {
  if (lp == DType::BFloat16) return gpu.bf16_tflops;
  if (lp == DType::Float16) return gpu.fp16_tflops;
  return gpu.fp32_tflops;
}

// The training dtype: the most common 16-bit or fp32 dtype of the comm records (the gradients'
// reductions and the parameters' gathers carry it); traces do not name it otherwise.
DType training_dtype(const Trace& t) {
  std::map<DType, std::size_t> n;
  for (const CommRecord& c : t.comms)
    if (c.dtype == DType::Float16 || c.dtype == DType::BFloat16 || c.dtype == DType::Float32)
      ++n[c.dtype];
  DType best = DType::Float16;
  std::size_t most = 0;
  for (const auto& [d, k] : n)
    if (k > most) {
      best = d;
      most = k;
    }
  return best;
}

// One compute class: spans of one kind, split into the same pieces per layer pass, with the same
// FLOPs, in runs of one hidden size and stage regime.
struct ComputeClass {
  std::string kind;
  std::uint32_t pieces = 1;
  double flops = 0;
  std::uint64_t hidden = 0;
  bool stage3 = false;
  double dense_flop_per_ns = 0;  // the dtype's dense rate, FLOP per ns
  std::vector<double> durs;      // ns
  std::vector<double> gaps;      // host issue gaps, ns (measured runs)
  double dur() const { return median(durs); }
  double eff() const { return flops / (dur() * dense_flop_per_ns); }
  double kernels() const {
    const HostCosts d;
    return static_cast<double>(kind == "backward" ? d.kernels_per_layer_backward
                                                  : d.kernels_per_layer_forward) /
           pieces;
  }
};

struct CommRows {
  std::map<std::uint32_t, std::size_t> group_sizes;  // group size -> records
  std::vector<const CommRecord*> records;
  std::vector<double> gaps;  // ns
};

// The spans of the traced rank the fit reads: the lowest rank present (kAllRanks for a simulated
// schedule relabelled as a measurement).
std::uint32_t fit_rank(const Trace& t) {
  std::uint32_t r = kAllRanks;
  for (const Span& s : t.spans) r = std::min(r, s.rank);
  return r;
}

bool is_compute(const std::string& c) {
  return c == "forward" || c == "backward" || c == "recompute";
}

struct Gathered {
  std::vector<ComputeClass> classes;
  std::array<CommRows, kCollectiveKindCount> comms;
  std::size_t with_issue = 0;  // traces that carry host issue times
};

Diagnostics gather(const CalibrationInput& in, const GpuSpec& gpu, Gathered& g) {
  Diagnostics d;
  const Trace& t = in.trace;
  const std::uint32_t rank = fit_rank(t);
  std::vector<const Span*> spans;
  for (const Span& s : t.spans)
    if (s.rank == rank && s.phase != Phase::Init) spans.push_back(&s);
  std::size_t computes = 0, issued = 0;
  for (const Span* s : spans) {
    computes += is_compute(s->category) ? 1 : 0;
    issued += s->issue_ns != kNoTime ? 1 : 0;
  }
  if (computes == 0)
    d.error(in.path, "/spans",
            "expected compute spans (forward, backward, recompute) to fit the compute efficiency "
            "from, got none");
  if (t.comms.empty())
    d.error(in.path, "/comms",
            "expected comm records (one per collective) to fit the collectives from, got none");
  if (d.has_errors()) return d;
  // Host issue gaps: the host issues ops one after another, so the time from one op's issue to
  // the next one's is what issuing it cost.
  std::map<std::uint32_t, double> gap;  // span index in `spans` -> ns
  const bool issue_times = issued * 2 >= spans.size();
  if (issue_times) {
    ++g.with_issue;
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < spans.size(); ++i)
      if (spans[i]->issue_ns != kNoTime) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return spans[a]->issue_ns < spans[b]->issue_ns;
    });
    for (std::size_t k = 0; k + 1 < order.size(); ++k)
      gap[static_cast<std::uint32_t>(order[k])] =
          static_cast<double>(spans[order[k + 1]]->issue_ns - spans[order[k]]->issue_ns);
  }
  // Pieces per (kind, layer) in the first traced micro-step, as the engine counts them.
  std::uint32_t first_step = 0xFFFFFFFFu;
  for (const Span* s : spans)
    if (is_compute(s->category)) first_step = std::min(first_step, s->step);
  std::map<std::pair<std::string, std::uint32_t>, std::uint32_t> pieces;
  for (const Span* s : spans)
    if (is_compute(s->category) && s->step == first_step && s->micro_step == 0)
      ++pieces[{s->category, s->layer}];
  const bool stage3 = t.meta.stage == 3 && t.meta.mode == "deepspeed";
  const double dense = dense_tflops(gpu, training_dtype(t)) * 1e3;  // FLOP per ns
  std::map<std::tuple<std::string, std::uint32_t, double>, std::size_t> index;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = *spans[i];
    if (!is_compute(s.category) || s.dur_ns <= 0) continue;
    const auto p = pieces.find({s.category, s.layer});
    const std::uint32_t n = p == pieces.end() ? 1 : p->second;
    const auto key = std::make_tuple(s.category, n, s.flops);
    auto it = index.find(key);
    if (it == index.end()) {
      ComputeClass c;
      c.kind = s.category;
      c.pieces = n;
      c.flops = s.flops;
      c.hidden = in.hidden;
      c.stage3 = stage3;
      c.dense_flop_per_ns = dense;
      it = index.emplace(key, g.classes.size()).first;
      g.classes.push_back(std::move(c));
    }
    ComputeClass& c = g.classes[it->second];
    c.durs.push_back(static_cast<double>(s.dur_ns));
    if (auto x = gap.find(static_cast<std::uint32_t>(i)); x != gap.end())
      c.gaps.push_back(x->second);
  }
  for (const CommRecord& c : t.comms) {
    if (c.rank != rank && c.rank != kAllRanks) continue;
    if (c.dur_ns <= 0 || c.bytes == 0 || c.group_size < 2) continue;
    CommRows& rows = g.comms[static_cast<std::size_t>(c.kind)];
    rows.records.push_back(&c);
    ++rows.group_sizes[c.group_size];
  }
  for (std::size_t i = 0; i < spans.size(); ++i)
    if (spans[i]->category == "collective")
      if (auto x = gap.find(static_cast<std::uint32_t>(i)); x != gap.end())
        for (const CommRecord& c : t.comms)
          if (c.op == spans[i]->op) {
            g.comms[static_cast<std::size_t>(c.kind)].gaps.push_back(x->second);
            break;
          }
  return d;
}

// The compute efficiency: per hidden size, the time-weighted rate of the GPU-bound classes.
void fit_compute(std::vector<ComputeClass>& classes, Calibration& out, std::vector<bool>& gpu_bound,
                 Diagnostics& d) {
  std::map<std::uint64_t, double> best;  // hidden -> fastest class's efficiency
  for (const ComputeClass& c : classes)
    if (c.flops > 0) best[c.hidden] = std::max(best[c.hidden], c.eff());
  gpu_bound.assign(classes.size(), false);
  struct Point {
    std::uint64_t hidden;
    double eff;
    double residual;
    std::size_t spans;
  };
  std::vector<Point> points;
  for (const auto& [h, top] : best) {
    double flops = 0, dense_ns = 0, residual = 0;
    std::size_t spans = 0, n_classes = 0;
    for (std::size_t i = 0; i < classes.size(); ++i) {
      const ComputeClass& c = classes[i];
      if (c.hidden != h || c.flops <= 0 || c.eff() * (1 + kHostBoundTolerance) < top) continue;
      gpu_bound[i] = true;
      ++n_classes;
      for (double t : c.durs) {
        flops += c.flops;
        dense_ns += t * c.dense_flop_per_ns;
        ++spans;
      }
    }
    const double e = flops / dense_ns;
    for (std::size_t i = 0; i < classes.size(); ++i)
      if (gpu_bound[i] && classes[i].hidden == h)
        for (double t : classes[i].durs) {
          const double predicted = classes[i].flops / (e * classes[i].dense_flop_per_ns);
          residual = std::max(residual, std::fabs(predicted - t) / t);
        }
    (void)n_classes;
    points.push_back({h, e, residual, spans});
  }
  if (points.empty()) {
    d.error("zerosim calibrate", "", "expected compute spans with FLOPs > 0, got none");
    return;
  }
  std::size_t known = 0;
  for (const Point& p : points) known += p.hidden > 0 ? 1 : 0;
  if (known >= 2 && known == points.size()) {
    // 1/eff = 1/e_max + (h_half/e_max) / h: a line in 1/h, least squares over the sizes.
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const Point& p : points) {
      const double x = 1.0 / static_cast<double>(p.hidden), y = 1.0 / p.eff;
      n += 1;
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double det = n * sxx - sx * sx;
    const double b = det > 0 ? (n * sxy - sx * sy) / det : -1;
    const double a = (sy - b * sx) / n;
    if (a > 0 && b >= 0 && 1 / a <= 1) {
      out.curve = true;
      double residual = 0;
      std::string sizes;
      for (const Point& p : points) {
        const double h = static_cast<double>(p.hidden);
        const double fitted = (1 / a) * h / (h + b / a);
        residual = std::max(residual, std::fabs(fitted - p.eff) / p.eff);
        sizes += (sizes.empty() ? "" : ", ") + std::to_string(p.hidden) + " -> " + g3(p.eff);
      }
      const std::string basis = "curve fitted through " + std::to_string(points.size()) +
                                " hidden sizes (" + sizes + ") of the GPU-bound compute spans";
      out.e_max = {1 / a, basis, residual};
      out.h_half = {b / a, basis, residual};
      return;
    }
    d.warning("zerosim calibrate", "",
              "the efficiencies of the hidden sizes do not fit e_max h / (h + h_half) (they do not "
              "grow with h); calibrating the size class with the most spans instead");
  }
  const Point& p = *std::max_element(
      points.begin(), points.end(), [](const auto& x, const auto& y) { return x.spans < y.spans; });
  out.curve = false;
  out.hidden = p.hidden;
  out.efficiency = {p.eff,
                    "size class: one GEMM size (hidden " +
                        (p.hidden ? std::to_string(p.hidden) : std::string("unknown")) + ") from " +
                        std::to_string(p.spans) +
                        " GPU-bound compute spans; other hidden sizes follow the default curve's "
                        "h_half through this point",
                    p.residual};
}

// Host costs: least squares of H = x kernel_launch + s hooks over the classes whose host time is
// known (host-bound classes' durations, or issue gaps).
void fit_host(const std::vector<ComputeClass>& classes, const std::vector<bool>& gpu_bound,
              bool issue_times, Calibration& out) {
  struct P {
    double x, s, h;
  };
  std::vector<P> pts;
  double bound_kl = 1e300;  // upper bound on the launch cost from GPU-bound classes
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const ComputeClass& c = classes[i];
    if (issue_times && !c.gaps.empty()) {
      pts.push_back({c.kernels(), c.stage3 ? 1.0 : 0.0, median(c.gaps)});
    } else if (!issue_times && !gpu_bound[i]) {
      pts.push_back({c.kernels(), c.stage3 ? 1.0 : 0.0, c.dur()});
    } else {
      bound_kl = std::min(bound_kl, c.dur() / c.kernels());
    }
  }
  const std::string how = issue_times ? "host issue gaps" : "host-bound compute spans";
  const HostCosts def;
  if (pts.empty()) {
    const std::string why =
        "not observable: every compute class runs at the GPU's rate (launch <= " +
        g3(bound_kl / 1e3) + " us); the default stays";
    out.kernel_launch_us = {std::nullopt, why, 0};
    out.stage3_hooks_us = {std::nullopt, why, 0};
    return;
  }
  // Normal equations; with no stage-3 point the hooks drop out, with one distinct x among only
  // stage-3 points the launch cannot be told from the hooks (the default launch is assumed).
  double sxx = 0, sxs = 0, sss = 0, sxh = 0, ssh = 0;
  for (const P& p : pts) {
    sxx += p.x * p.x;
    sxs += p.x * p.s;
    sss += p.s * p.s;
    sxh += p.x * p.h;
    ssh += p.s * p.h;
  }
  double kl = 0, hooks = 0;
  bool kl_fitted = true, hooks_fitted = sss > 0;
  const double det = sxx * sss - sxs * sxs;
  if (sss == 0) {
    kl = sxh / sxx;
  } else if (det > 1e-9 * sxx * sss) {
    kl = (sxh * sss - sxs * ssh) / det;
    hooks = (sxx * ssh - sxs * sxh) / det;
  } else {
    kl = def.kernel_launch_us * 1e3;
    kl_fitted = false;
    hooks = (ssh - sxs * kl) / sss;
  }
  double residual = 0;
  for (const P& p : pts)
    residual = std::max(residual, std::fabs(p.x * kl + p.s * hooks - p.h) / p.h);
  const std::string basis = "least squares over " + std::to_string(pts.size()) + " classes of " +
                            how + " (host time = kernels x launch / pieces" +
                            (hooks_fitted ? " + hooks" : "") + ")";
  if (kl_fitted)
    out.kernel_launch_us = {std::max(0.0, kl) / 1e3, basis, residual};
  else
    out.kernel_launch_us = {std::nullopt,
                            "not observable: one class shape only, not separable from the hooks; "
                            "the default stays and the hooks are fitted with it",
                            0};
  if (hooks_fitted)
    out.stage3_hooks_us = {std::max(0.0, hooks) / 1e3, basis, residual};
  else
    out.stage3_hooks_us = {std::nullopt, "not observable: no host-bound stage-3 compute span", 0};
}

void fit_collectives(Gathered& g, const CalibratedLinks* nccl, Calibration& out, Diagnostics& d) {
  const HostCosts def;
  std::vector<double> launches, gaps;
  struct Trial {
    FittedCollective f;
    double alpha_trace_us = 0;
  };
  std::vector<Trial> fitted;
  for (const CollectiveKind k : kAllCollectiveKinds) {
    CommRows& rows = g.comms[static_cast<std::size_t>(k)];
    gaps.insert(gaps.end(), rows.gaps.begin(), rows.gaps.end());
    if (rows.records.empty()) continue;
    std::uint32_t n = 0;
    std::size_t most = 0;
    for (const auto& [size, count] : rows.group_sizes)
      if (count > most) {
        n = size;
        most = count;
      }
    std::map<Bytes, std::vector<double>> by_size;
    for (const CommRecord* c : rows.records)
      if (c->group_size == n) by_size[c->bytes].push_back(static_cast<double>(c->dur_ns) / 1e3);
    const std::string name(collective_name(k));
    if (by_size.size() < 2) {
      d.note("zerosim calibrate", "",
             name + ": not fitted: one message size (" + std::to_string(by_size.begin()->first) +
                 " B) in the traces; alpha and busBw need two; the model's stay");
      continue;
    }
    // t = alpha + S × factor / busBw by least squares on the absolute time of every call (the
    // nccl-tests fit weighs rows by 1/t², right for a table of sizes; a step's time is the sum of
    // its calls, so here each call counts by its seconds). NCCL switches algorithm with size
    // (NVLS or tree for some sizes, ring for others), so one line per kind is an approximation:
    // the residual says how good.
    const double factor = collective_busbw_factor(k, n);
    double w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [bytes, times] : by_size)
      for (double t : times) {
        const double x = static_cast<double>(bytes) * factor;  // bus bytes
        w += 1;
        sx += x;
        sy += t;
        sxx += x * x;
        sxy += x * t;
      }
    const double det = w * sxx - sx * sx;
    double slope = det > 0 ? (w * sxy - sx * sy) / det : 0;  // µs per bus byte
    double alpha = (sy - slope * sx) / w;
    if (alpha < 0) {
      alpha = 0;
      slope = sxy / sxx;
    }
    if (!(slope > 0) || !std::isfinite(slope)) {
      d.note("zerosim calibrate", "",
             name + ": not fitted: the comm records' times do not grow with their size");
      continue;
    }
    CalibratedCollective fit;
    fit.alpha_us = alpha;
    fit.busbw_gbps = 1e-3 / slope;  // bytes per µs / 1e3 = GB/s
    fit.ranks = n;
    fit.rows = static_cast<std::uint32_t>(by_size.size());
    for (const auto& [bytes, times] : by_size) {
      const double predicted = alpha + static_cast<double>(bytes) * factor * slope;
      const double t = median(times);
      fit.max_rel_residual = std::max(fit.max_rel_residual, std::fabs(predicted - t) / t);
    }
    Trial tr;
    tr.f.kind = k;
    tr.f.fit = fit;
    tr.f.min_bytes = by_size.begin()->first;
    tr.f.max_bytes = by_size.rbegin()->first;
    tr.f.calls = most;
    tr.alpha_trace_us = tr.f.fit.alpha_us;
    if (const CalibratedCollective* dev = nccl ? nccl->find(k) : nullptr)
      launches.push_back(tr.alpha_trace_us - dev->alpha_us);
    fitted.push_back(std::move(tr));
  }
  double launch = def.collective_launch_us;
  if (!gaps.empty()) {
    launch = median(gaps) / 1e3;
    out.collective_launch_us = {
        launch,
        "median host issue gap after " + std::to_string(gaps.size()) + " collective launches", 0};
  } else if (!launches.empty()) {
    double sum = 0, residual = 0;
    for (double l : launches) sum += l;
    launch = std::max(0.0, sum / static_cast<double>(launches.size()));
    for (double l : launches)
      residual = std::max(residual, launch > 0 ? std::fabs(l - launch) / launch : 0.0);
    out.collective_launch_us = {launch,
                                "trace alpha minus the nccl-tests device alpha, mean over " +
                                    std::to_string(launches.size()) + " kinds",
                                residual};
  } else {
    out.collective_launch_us = {std::nullopt,
                                "not observable without host issue times or an nccl-tests table "
                                "(--nccl-tests); the default stays and the fitted alphas are net "
                                "of it",
                                0};
  }
  for (Trial& tr : fitted) {
    tr.f.fit.alpha_us = std::max(0.0, tr.alpha_trace_us - launch);
    tr.f.basis = "alpha-beta least squares on call time over " + std::to_string(tr.f.fit.rows) +
                 " message sizes of " + std::to_string(tr.f.calls) + " calls on " +
                 std::to_string(tr.f.fit.ranks) + " ranks; alpha net of a " + g3(launch) +
                 " us launch";
    tr.f.fit.source = tr.f.basis;
    out.collectives.push_back(std::move(tr.f));
  }
}

// The first fitted number that is not finite, named, or "" when all are. The writer writes a
// non-finite double as null, which reads back as "not fitted": spans of 1.7e308 FLOPs fitted an
// efficiency of inf that calibrate printed, wrote as null and passed (a hostile-input pass).
std::string non_finite(const Calibration& c) {
  const auto bad = [](double x) { return !std::isfinite(x); };
  const std::pair<const char*, const FittedParam*> params[] = {
      {"compute efficiency", &c.efficiency},
      {"e_max", &c.e_max},
      {"h_half", &c.h_half},
      {"kernel_launch_us", &c.kernel_launch_us},
      {"stage3_hooks_us", &c.stage3_hooks_us},
      {"collective_launch_us", &c.collective_launch_us}};
  for (const auto& [name, p] : params) {
    if (p->value && bad(*p->value)) return std::string(name) + " " + g3(*p->value);
    if (bad(p->residual)) return std::string(name) + "'s residual " + g3(p->residual);
  }
  for (const FittedCollective& f : c.collectives)
    for (const auto& [what, x] :
         {std::pair{"alpha_us", f.fit.alpha_us}, std::pair{"busbw_gbps", f.fit.busbw_gbps},
          std::pair{"residual", f.fit.max_rel_residual}})
      if (bad(x)) return std::string(collective_name(f.kind)) + " " + what + " " + g3(x);
  return "";
}

}  // namespace

Result<Calibration> fit_calibration(const std::vector<CalibrationInput>& inputs,
                                    const CalibratedLinks* nccl_tests, bool allow_host_clock) {
  Diagnostics d;
  if (inputs.empty())
    return fail<Calibration>("zerosim calibrate", "", "expected at least one measured trace");
  Calibration out;
  out.gpu = inputs.front().trace.meta.gpu;
  for (const CalibrationInput& in : inputs) {
    const TraceMeta& m = in.trace.meta;
    if (m.clock == "simulated")
      d.error(in.path, "/meta/clock",
              "expected a measured trace (clock \"cuda_events\"), got clock \"simulated\": a "
              "prediction cannot calibrate the model that made it");
    else if (m.clock == "host_steady" && !allow_host_clock)
      d.error(in.path, "/meta/clock",
              "expected clock \"cuda_events\", got \"host_steady\": host time is not GPU time "
              "(the host backend's spans time CPU work); --allow-host-clock fits it anyway");
    if (m.gpu != out.gpu)
      d.error(in.path, "/meta/gpu",
              "expected every trace from one GPU, got " + quote(m.gpu) + " after " +
                  quote(out.gpu) + " in " + inputs.front().path);
    out.sources.push_back({in.path, in.digest, m.clock, m.model, m.stage, m.world, in.hidden});
  }
  if (d.has_errors()) return d;
  auto gpu = find_gpu(out.gpu, inputs.front().path + ": /meta/gpu");
  if (!gpu.ok()) return gpu.diagnostics();
  Gathered g;
  for (const CalibrationInput& in : inputs) d.append(gather(in, gpu.value(), g));
  if (d.has_errors()) return d;
  std::vector<bool> gpu_bound;
  fit_compute(g.classes, out, gpu_bound, d);
  if (d.has_errors()) return d;
  fit_host(g.classes, gpu_bound, g.with_issue == inputs.size(), out);
  fit_collectives(g, nccl_tests, out, d);
  if (const std::string bad = non_finite(out); !bad.empty())  // one line: the fit's notes dropped
    return fail<Calibration>("zerosim calibrate", "",
                             "expected finite fitted values, got " + bad +
                                 ": the traces' FLOPs, bytes or times overflow a double; nothing "
                                 "written");
  return Result<Calibration>(std::move(out), d);
}

}  // namespace zerosim
