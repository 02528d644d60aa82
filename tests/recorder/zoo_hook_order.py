"""The zoo grad-order fixtures (tests/data/recordings/grad_order/<family>.json) still hold what the
recorder sees on this torch, and DeepSpeed's own module hooks would see the same interleaving.

    /usr/bin/python3 tests/recorder/zoo_hook_order.py WORK_DIR

1. zoo_replicas.py is run again into WORK_DIR: its grad_order and backward must equal the fixtures.
2. Each replica runs with hooks shaped like DeepSpeed stage 3's (parameter_offload.py,
   _register_hooks_recursively: PreBackwardFunctionForModule on every module's tensor outputs from
   a forward hook, PostBackwardFunctionModule on its tensor inputs from a forward pre-hook, each
   `forward` returning `x.detach()`) and gradient hooks on the AccumulateGrad nodes (stage3.py,
   create_reduce_and_remove_grad_hooks). Their extra autograd nodes must not move a gradient hook
   across a pre-backward hook: the pre-backward/gradient order equals the fixture's.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "data", "recordings", "grad_order")


def deepspeed_shaped_order(family):
    import torch
    sys.path.insert(0, HERE)
    import zoo_replicas as z

    events = []

    def hook_function(kind):
        class Hook(torch.autograd.Function):
            @staticmethod
            def forward(ctx, name, x):
                ctx.name = name
                return x.detach()

            @staticmethod
            def backward(ctx, g):
                if kind:
                    events.append(kind + " " + ctx.name)
                return None, g
        return Hook

    pre, post = hook_function("pre_backward"), hook_function(None)

    def wrap(fn, name, t):
        if isinstance(t, torch.Tensor):
            return fn.apply(name, t) if t.requires_grad else t
        if type(t) is tuple:
            return tuple(wrap(fn, name, x) for x in t)
        return t

    cls, cfg = z.REPLICAS[family]
    torch.manual_seed(0)
    model = cls(cfg)
    for n, m in model.named_modules():
        m.register_forward_pre_hook(lambda mod, inp, n=n: wrap(post, n, inp))
        m.register_forward_hook(lambda mod, inp, out, n=n: wrap(pre, n, out))
    nodes = []  # the AccumulateGrad nodes must outlive backward for their hooks to fire
    for n, p in model.named_parameters():
        node = p.expand_as(p).grad_fn.next_functions[0][0]
        node.register_hook(lambda *_a, n=n: events.append("grad " + n))
        nodes.append(node)
    model(torch.randint(0, cfg["vocab_size"], (2, 8))).float().pow(2).mean().backward()
    seen, out = set(), []
    for e in events:  # a tied weight's hook fires once per use: its first, as the recorder keeps
        if e.startswith("grad ") and e in seen:
            continue
        seen.add(e)
        out.append(e)
    return out


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: torch is not installed for %s" % sys.executable)
        return 77
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(HERE, "zoo_replicas.py"), work], check=True,
                   stdout=subprocess.DEVNULL)
    errors = []
    for family in ("gpt2", "llama"):
        with open(os.path.join(FIXTURES, family + ".json")) as f:
            fixture = json.load(f)
        with open(os.path.join(work, family + ".json")) as f:
            fresh = json.load(f)
        for key in ("grad_order", "backward"):
            if fresh[key] != fixture[key]:
                errors.append("%s: the recorder's %s on torch %s differs from the fixture's "
                              "(recorded on torch %s)" % (family, key, fresh["torch"],
                                                         fixture["torch"]))
        ds = deepspeed_shaped_order(family)
        if ds != fixture["backward"]:
            i = next(i for i, (a, b) in enumerate(zip(ds + [None], fixture["backward"] + [None]))
                     if a != b)
            errors.append("%s: with DeepSpeed-shaped hooks event %d is %r, the recorder's %r" %
                          (family, i, (ds + [None])[i], (fixture["backward"] + [None])[i]))
    if errors:
        print("FAIL:\n  " + "\n  ".join(errors))
        return 1
    print("PASS: the fixtures' hook order, recorded again and under DeepSpeed-shaped hooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
