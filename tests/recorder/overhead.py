"""Measures the recorder's overhead on a job: two gloo ranks train an 8-layer MLP (1024 wide,
8.4 M params) with one all-reduce per gradient, in alternating blocks of 6 steps plain (no hook
installed) and recorded (a fresh recorder per block), so machine noise hits both; prints the median step time of each and the ratio.

    /usr/bin/python3 tests/recorder/overhead.py        (not a ctest: timing belongs in benchmarks)
"""

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.normpath(os.path.join(HERE, "..", "..", "tools"))


def worker(out):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(1024, 1024), nn.ReLU())])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    sys.path.insert(0, TOOLS)
    import zerosim_record
    times = {"plain": [], "recorded": [], "first": []}
    for block in range(8):
        mode = "recorded" if block % 2 else "plain"
        # A fresh recorder per recorded block, removed after it: the plain blocks run with no hook
        # at all. Its first step maps the modules (TorchFunctionMode): reported apart.
        rec = zerosim_record.Recorder(os.path.join(out, str(block)), model=model,
                                      optimizer=opt).start() if mode == "recorded" else None
        for i in range(6):
            dist.barrier()
            t0 = time.perf_counter()
            loss = model(torch.randn(32, 1024)).pow(2).mean()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            opt.step()
            opt.zero_grad()
            dt = time.perf_counter() - t0
            times["first" if rec is not None and i == 0 else mode].append(dt)
        if rec is not None:
            rec.stop()
    if dist.get_rank() == 0:
        p, r = statistics.median(times["plain"]), statistics.median(times["recorded"])
        print("plain    median step %.2f ms (%d steps)" % (p * 1e3, len(times["plain"])))
        print("recorded median step %.2f ms (%d steps)" % (r * 1e3, len(times["recorded"])))
        print("overhead %.1f %% (medians); a recorder's first step, which also maps the modules: "
              "median %.2f ms" % ((r / p - 1) * 100, statistics.median(times["first"]) * 1e3))
    dist.destroy_process_group()


def main():
    if len(sys.argv) > 1:
        return worker(sys.argv[1])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    out = tempfile.mkdtemp(prefix="zerosim_overhead_")
    procs = [subprocess.Popen([sys.executable, __file__, out],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2",
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                                       OMP_NUM_THREADS="1")) for r in range(2)]
    return max(p.wait() for p in procs)


if __name__ == "__main__":
    sys.exit(main())
