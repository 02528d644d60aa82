"""ctest recorder.*: records tiny_job.py's two gloo ranks and checks the recording against what
the job says it did (its own bookkeeping, expected.rankR.json) and against the model as written.

    /usr/bin/python3 tests/recorder/test_recorder.py enable|module|fail|tap WORKDIR [ZEROSIM]

With ZEROSIM (the zerosim executable), a fresh recording is also checked with
`zerosim check --predicted <the job's own log> --measured <the recording>`, which must pass.

Exit 0: pass; 1: a difference (printed); 77: torch is not installed (ctest SKIP_RETURN_CODE).
"""

import json
import os
import shutil
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.normpath(os.path.join(HERE, "..", "..", "tools"))
WORLD = 2

# The module calls of Tiny's first forward, with the params each call's forward touched, in first
# use order; the root reads emb.weight and head.* directly (external parameters), and multiplies
# by the frozen parameter, its own. "inner": the calls made while the call ran (where it ends).
EXPECTED_FORWARD = [
    {"module": "", "params": ["emb.weight", "head.weight", "head.bias", "frozen"],
     "external": ["emb.weight", "head.weight", "head.bias"], "inner": 6},
] + [
    c for i in range(2) for c in (
        {"module": "blocks.%d" % i, "params": [], "external": [], "inner": 2},
        {"module": "blocks.%d.fc" % i, "params": ["blocks.%d.fc.weight" % i,
                                                 "blocks.%d.fc.bias" % i], "external": [],
         "inner": 0},
        {"module": "blocks.%d.ln" % i, "params": ["blocks.%d.ln.weight" % i,
                                                 "blocks.%d.ln.bias" % i], "external": [],
         "inner": 0})
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(mode, out):
    port = str(free_port())
    procs = []
    for r in range(WORLD):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, PYTHONPATH=TOOLS, OMP_NUM_THREADS="1")
        job = [os.path.join(HERE, "tiny_job.py"), mode, out]
        cmd = [sys.executable] + (["-m", "zerosim_record", "-o", out] if mode == "module" else
                                  []) + job
        procs.append(subprocess.Popen(cmd, env=env))
    rcs = [p.wait(timeout=300) for p in procs]
    if any(rcs):
        raise SystemExit("FAIL: the job's ranks exited with %s" % rcs)


def load(path):
    with open(path) as f:
        return json.load(f)


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def check(cond, what, errors):
    if not cond:
        errors.append(what)


def check_tap():
    """The wrappers of the collectives gloo cannot run, on a stand-in module with torch's own
    signatures (group of 4; the group's rank of global rank 6 is 2)."""
    import inspect
    import types
    import torch
    import torch.distributed as dist
    sys.path.insert(0, TOOLS)
    from zerosim_record.collectives import CollectiveTap
    calls = []
    fake = types.SimpleNamespace(ReduceOp=dist.ReduceOp, get_world_size=lambda g=None: 4,
                                 get_group_rank=lambda g, r: r - 4)
    for name in ("all_gather_into_tensor", "reduce_scatter_tensor", "reduce", "broadcast"):
        def stand_in(*a, _n=name, **k):
            calls.append(_n)
        stand_in.__signature__ = inspect.signature(getattr(dist, name))
        setattr(fake, name, stand_in)

    class Sink:
        rows = []

        def active(self):
            return True

        def collective(self, rec, modelled):
            self.rows.append(dict(rec, modelled=modelled))

        def fail(self, msg):
            raise AssertionError(msg)

    sink = Sink()
    tap = CollectiveTap(fake, sink)
    tap.install()
    g = object()
    fake.all_gather_into_tensor(torch.empty(12, dtype=torch.float16),
                                torch.empty(3, dtype=torch.float16), group=g)
    fake.reduce_scatter_tensor(torch.empty(2), torch.empty(8), op=dist.ReduceOp.MAX, group=g)
    fake.reduce(torch.empty(5, dtype=torch.bfloat16), dst=6, group=g)
    fake.broadcast(torch.empty(1, dtype=torch.int64), 6, group=g)
    tap.uninstall()
    want = [
        {"torch_op": "all_gather_into_tensor", "group_size": 4, "numel": 3, "out_numel": 12,
         "dtype": "float16", "modelled": True},
        {"torch_op": "reduce_scatter_tensor", "group_size": 4, "numel": 8, "out_numel": 2,
         "dtype": "float32", "reduce_op": "max", "modelled": True},
        {"torch_op": "reduce", "group_size": 4, "numel": 5, "out_numel": 5, "dtype": "bfloat16",
         "reduce_op": "sum", "dst": 2, "modelled": True},
        {"torch_op": "broadcast", "group_size": 4, "numel": 1, "out_numel": 1, "dtype": "int64",
         "src": 2, "modelled": True},
    ]
    errors = ["call %d: recorded %s, expected %s" % (i, g_, w) for i, (g_, w) in
              enumerate(zip(sink.rows, want)) if g_ != w]
    if len(calls) != 4 or len(sink.rows) != 4:
        errors.append("calls through: %s, rows: %s" % (calls, sink.rows))
    if fake.reduce.__name__ != "stand_in":
        errors.append("uninstall left the wrapper in place")
    if errors:
        print("FAIL (tap):\n  " + "\n  ".join(errors))
        return 1
    print("PASS (tap): all_gather_into_tensor, reduce_scatter_tensor, reduce, broadcast")
    return 0


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: torch is not installed for %s (scripts/install_deps.sh installs "
              "python3-torch)" % sys.executable)
        return 77
    mode, work = sys.argv[1], sys.argv[2]
    if mode == "tap":
        return check_tap()
    out = os.path.join(work, "rec_" + mode)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    run_job(mode, out)
    errors = []
    for r in range(WORLD):
        exp = load(os.path.join(out, "expected.rank%d.json" % r))
        man = load(os.path.join(out, "recording.rank%d.json" % r))
        check(man["format"] == "zerosim-recording" and man["rank"] == r and
              man["world_size"] == WORLD, "rank %d manifest: %s" % (r, man), errors)
        if mode == "fail":
            check(not man["complete"] and "ZeroDivisionError" in (man["error"] or ""),
                  "rank %d: a failing recorder must say so in the manifest: %s" % (r, man), errors)
            continue
        check(man["complete"], "rank %d: recording incomplete: %s" % (r, man["error"]), errors)
        if mode == "module":  # no engine, no ds_config given: none recorded
            check(man["ds_config"] is None, "rank %d: ds_config without an engine: %s" %
                  (r, man["ds_config"]), errors)
        else:
            ds = man["ds_config"]
            check(ds == "ds_config.rank%d.json" % r and
                  load(os.path.join(out, ds or "-")) == exp["ds_config"],
                  "rank %d: the manifest's ds_config %s, the engine's %s" %
                  (r, ds, exp["ds_config"]), errors)
        got = lines(os.path.join(out, "collectives.rank%d.jsonl" % r))
        want = exp["collectives"]
        if mode == "module":  # no engine: phases come from autograd and the optimizer only
            keys = ["op", "numel", "out_numel", "dtype", "group_size", "reduce_op", "dst", "src"]
            got = [{k: c[k] for k in keys if k in c} for c in got]
            want = [{k: c[k] for k in keys if k in c} for c in want]
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                errors.append("rank %d collective %d: recorded %s, the job did %s" % (r, i, g, w))
                break
        check(len(got) == len(want), "rank %d: %d collectives recorded, the job issued %d" %
              (r, len(got), len(want)), errors)
        others = lines(os.path.join(out, "other_collectives.rank%d.jsonl" % r))
        check([o["op"] for o in others] == ["barrier"], "rank %d other collectives: %s" %
              (r, others), errors)
        params = load(os.path.join(out, "params.rank%d.json" % r))
        check(params["params"] == exp["params"], "rank %d params: %s, the model has %s" %
              (r, params["params"], exp["params"]), errors)
        check(params["grad_order"] == exp["grad_order"], "rank %d grad order: recorded %s, "
              "tensor hooks saw %s" % (r, params["grad_order"], exp["grad_order"]), errors)
        mm = load(os.path.join(out, "modules.rank%d.json" % r))
        check(mm["forward"] == EXPECTED_FORWARD, "rank %d forward module map: %s" %
              (r, json.dumps(mm["forward"])), errors)
        # The param list is version 2: stage 3 fetches by the recorded module calls.
        check(params.get("version") == 2 and params.get("modules") == mm["modules"] and
              params.get("forward") == mm["forward"],
              "rank %d params: no version 2 module section equal to the module map" % r, errors)
        pre = [e["pre_backward"] for e in mm["backward"] if "pre_backward" in e]
        check(pre[:1] == [""] and pre.index("blocks.1") < pre.index("blocks.0"),
              "rank %d pre-backward order (root first, blocks in reverse): %s" % (r, pre), errors)
        grads = [e["grad"] for e in mm["backward"] if "grad" in e]
        check(grads == params["grad_order"], "rank %d backward events vs grad order" % r, errors)
    if len(sys.argv) > 3 and mode != "fail" and not errors:
        job_log = os.path.join(out, "job_log.jsonl")
        with open(job_log, "w") as f:
            for r in range(WORLD):
                for c in load(os.path.join(out, "expected.rank%d.json" % r))["collectives"]:
                    f.write(json.dumps(c, separators=(",", ":")) + "\n")
        if mode == "module":  # phases are not the job's own without an engine: sizes only
            job_log = None
        if job_log:
            res = subprocess.run([sys.argv[3], "check", "--predicted", job_log, "--measured", out],
                                 capture_output=True, text=True)
            check(res.returncode == 0 and "collective sequence: identical" in res.stdout,
                  "zerosim check of the fresh recording: exit %d\n%s%s" %
                  (res.returncode, res.stdout, res.stderr), errors)
    if errors:
        print("FAIL (%s):\n  " % mode + "\n  ".join(errors))
        return 1
    print("PASS (%s): %d ranks recorded as the job ran" % (mode, WORLD))
    return 0


if __name__ == "__main__":
    sys.exit(main())
