#!/usr/bin/env python3
# plan vs simulate for every shipped scenario (issue #13's proof table): the plan row that matches
# the scenario against the simulation of the same inputs, for the whole-run peak and the steady
# peak (the schedule's part: plan's overhead layer taken off), the bytes sent in a steady step and
# the steady step time. Prints a markdown table; "equal" is yes when all four agree exactly.
#   python3 scripts/plan_vs_simulate.py build/cli/zerosim   (from the repository root)
import json, subprocess, sys, glob, os
z = sys.argv[1]
print("| scenario | row | plan peak (B) | sim peak (B) | plan steady (B) | sim steady (B) | plan traffic (B/step) | sim traffic (B/step) | plan step (ns) | sim step (ns) | equal |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
# The scenarios beside this script, wherever it is run from (from another directory the glob
# found nothing and the table was empty, without a word).
scenarios = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "*.json")))
if not scenarios: sys.exit("plan_vs_simulate.py: no scenarios/*.json beside " + os.path.dirname(os.path.abspath(__file__)))
for f in scenarios:
    if json.load(open(f)).get("format") != "zerosim-scenario": continue  # e.g. a param list
    p = subprocess.run([z, "plan", "--scenario", f, "--format", "json"], capture_output=True, text=True)
    s = subprocess.run([z, "simulate", "--scenario", f, "--format", "json"], capture_output=True, text=True)
    if not p.stdout.strip() or not s.stdout.strip():
        print(f"| {os.path.basename(f)} | not a plan/simulate scenario (plan rc {p.returncode}, simulate rc {s.returncode}: {(p.stderr or s.stderr).strip()[:80]}) |"); continue
    P = json.loads(p.stdout); S = json.loads(s.stdout)
    rows = [r for r in P["rows"] if r.get("matches_ds_config")]
    if not rows:
        st = S["meta"]["stage"]; rows = [r for r in P["rows"] if r["stage"] == st and r["offload"] == "none"]
    r = rows[0]
    last = S["time"]["steps"][-1]
    pp = r["total_bytes"] - r["overhead_bytes"]
    sp = S["memory"]["peak_bytes"]; ss = S["memory"]["steady_peak_bytes"]
    # The overhead layer is a fixed part F plus 5 % fragmentation of the tensor bytes
    # (sim/src/memory/overhead.cc): F from the peak, then the steady tensor bytes from its total.
    F = r["overhead_bytes"] - int(pp * 0.05)
    ps = next(t for t in range(r["steady_total_bytes"] - F - int(r["steady_total_bytes"] * 0.05) - 4, r["steady_total_bytes"])
              if t + F + int(t * 0.05) == r["steady_total_bytes"]) if r["steady_total_bytes"] != r["total_bytes"] else pp
    eq = pp == sp and ps == ss and r["comm_bytes_per_step"] == last["bytes_sent"] and r["steady_step_ns"] == last["duration_ns"]
    print(f"| {os.path.basename(f)} | {r['stage']}/{r['offload']} | {pp} | {sp} | {ps} | {ss} | {r['comm_bytes_per_step']} | {last['bytes_sent']} | {r['steady_step_ns']} | {last['duration_ns']} | {'yes' if eq else 'NO'} |")
