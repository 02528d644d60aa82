"""A two-rank gloo job for the recorder's test: a tiny model whose root reads its embedding's and
head's weights directly, trained with gradient accumulation 2 by a small DeepSpeed-shaped engine
(backward reduces at the boundary, step all-reduces a norm and broadcasts). The job
writes what it did, from its own bookkeeping and not from the recorder, to expected.rankR.json.

Run by test_recorder.py as `python tiny_job.py MODE OUT` (MODE: enable | module | fail), or under
`python -m zerosim_record -o OUT tiny_job.py module OUT`. Environment: RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

GAS = 2
STEPS = 2
# The job's ds_config, kept where DeepSpeed's engine keeps the dict it was given (engine.config);
# the recorder writes it beside the manifest. Batches of 4 sequences per rank, 2 ranks.
DS_CONFIG = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
             "gradient_accumulation_steps": GAS, "zero_optimization": {"stage": 0}}


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.ln = nn.LayerNorm(8)

    def forward(self, x):
        return torch.relu(self.ln(self.fc(x)))


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(8, 16)
        self.frozen = nn.Parameter(torch.ones(3), requires_grad=False)

    def forward(self, ids):
        h = F.embedding(ids, self.emb.weight)  # the parent reads its child's weight
        for b in self.blocks:
            h = b(h)
        return F.linear(h, self.head.weight, self.head.bias) * self.frozen.sum()


class Log:
    def __init__(self, rank):
        self.rank = rank
        self.rows = []
        self.phase = "init"
        self.step = 0
        self.micro = 0

    def add(self, op, t, out=None, **extra):
        row = {"rank": self.rank, "step": self.step, "micro_step": self.micro, "phase": self.phase,
               "op": op, "numel": t.numel(), "out_numel": (out if out is not None else t).numel(),
               "dtype": str(t.dtype).replace("torch.", ""), "group_size": dist.get_world_size()}
        row.update(extra)
        self.rows.append(row)


class Engine:
    """The shape of DeepSpeed's engine: backward reduces at the boundary, step updates."""

    def __init__(self, model, opt, log):
        self.module, self.opt, self.log, self.micro_steps = model, opt, log, 0
        self.config = DS_CONFIG

    def is_gradient_accumulation_boundary(self):
        return (self.micro_steps + 1) % GAS == 0

    def backward(self, loss):
        self.log.phase = "backward"
        loss.backward()
        grads = [p.grad for p in self.module.parameters() if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads])
        # gloo has no reduce-scatter (ProcessGroupGloo in torch 1.13): a reduce to rank 0 instead
        head = flat[:10].contiguous()
        self.log.add("reduce", head, reduce_op="sum", dst=0)
        dist.reduce(head, dst=0)
        if self.is_gradient_accumulation_boundary():
            self.log.add("all_reduce", flat, reduce_op="sum")
            dist.all_reduce(flat)
        self.log.micro += 1

    def step(self):
        boundary = self.is_gradient_accumulation_boundary()
        self.log.phase = "step"
        self.log.micro -= 1
        if boundary:
            norm = torch.zeros(1)
            self.log.add("all_reduce", norm, reduce_op="max")
            dist.all_reduce(norm, op=dist.ReduceOp.MAX)
            self.opt.step()
            self.opt.zero_grad()
            # gloo has no all_gather_into_tensor either: a broadcast from rank 1 of a 16-bit
            # buffer (test_recorder.py checks the all-gather and reduce-scatter wrappers apart)
            part = torch.zeros(5, dtype=torch.float16)
            self.log.add("broadcast", part, src=1)
            dist.broadcast(part, src=1)
            t = torch.zeros(4, dtype=torch.float64)  # gloo reduces no bf16
            self.log.add("reduce", t, reduce_op="sum", dst=1)
            dist.reduce(t, dst=1)
        self.log.micro += 1
        self.micro_steps += 1
        if boundary:
            self.log.step += 1
            self.log.micro = 0


def main():
    mode, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    log = Log(rank)
    engine = Engine(model, opt, log)
    rec = None
    if mode in ("enable", "fail"):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
        import zerosim_record
        rec = zerosim_record.enable(out, engine=engine)
        if mode == "fail":  # the recorder's own error must not reach the job
            rec._tap._describe = lambda *a: 1 / 0
    for p in model.parameters():
        log.add("broadcast", p.data, src=0)
        dist.broadcast(p.data, src=0)
    dist.barrier()  # a collective zerosim does not model: recorded apart
    grad_order = []  # the first backward's, from tensor hooks (they run as the grad is made)
    trainable = sum(1 for p in model.parameters() if p.requires_grad)
    for n, p in model.named_parameters():
        if p.requires_grad:
            p.register_hook(
                lambda g, n=n: grad_order.append(n) if len(grad_order) < trainable else None)
    for _ in range(STEPS * GAS):
        log.phase = "forward"
        ids = torch.randint(0, 16, (4, 3))
        loss = model(ids).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
    expected = {"collectives": log.rows, "grad_order": grad_order, "ds_config": DS_CONFIG,
                "params": [[n, list(p.shape)] + ([] if p.requires_grad else [False])
                           for n, p in model.named_parameters()]}
    with open(os.path.join(out, "expected.rank%d.json" % rank), "w") as f:
        json.dump(expected, f)
    if rec is not None:
        rec.stop()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
