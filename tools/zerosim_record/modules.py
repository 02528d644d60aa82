"""What the model does in its first forward and backward: the module tree, the module calls in
forward order with the parameters each call's forward touches and where each call ends ("inner":
the calls made while it ran), the gradient order, and the
interleaving of gradient hooks with module pre-backward hooks.

Parameter use is seen with a TorchFunctionMode: every torch function or Tensor method that
receives a parameter while a module's forward runs is charged to the innermost running module.
That catches a parent reading a child's weight (`F.linear(x, self.fc.weight)`), which DeepSpeed
stage 3 treats as an external parameter of the running module (partition_parameters.py,
register_external_parameter; parameter_offload.py, the module's ds_external_parameters).

Gradient readiness is hooked where DeepSpeed hooks it: the AccumulateGrad node of each parameter
(stage_1_and_2.py create_reduce_and_remove_grad_hooks: `param.expand_as(param).grad_fn.
next_functions[0][0].register_hook`), or register_post_accumulate_grad_hook where torch has it
(torch >= 2.1, which DeepSpeed prefers when present). A module's pre-backward is seen the way
DeepSpeed sees it (parameter_offload.py, PreBackwardFunction): an identity autograd function on the
module's outputs whose backward runs just before the module's own.
"""

import torch
from torch.overrides import TorchFunctionMode


def param_shape(p):
    # Under ZeRO stage 3 a partitioned param's data is empty; DeepSpeed keeps the full shape in
    # ds_shape (partition_parameters.py, _convert_to_deepspeed_param).
    return [int(d) for d in getattr(p, "ds_shape", p.shape)]


class _UseMode(TorchFunctionMode):
    def __init__(self, tracker):
        super().__init__()
        self._t = tracker

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            self._t.saw(args, kwargs)
        except Exception as e:
            self._t.fail("tracking parameter use: %r" % (e,))
        return func(*args, **kwargs)


class _PreBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tracker, name, *tensors):
        ctx.tracker = tracker
        ctx.name = name
        out = tuple(t.view_as(t) for t in tensors)
        return out if len(out) > 1 else out[0]

    @staticmethod
    def backward(ctx, *grads):
        ctx.tracker.pre_backward(ctx.name)
        return (None, None) + grads


class ModuleTracker:
    """Records the first forward and backward of `root`; hooks stay cheap afterwards."""

    def __init__(self, recorder, root):
        self.rec = recorder
        self.root = root
        self.module_names = {id(m): n for n, m in root.named_modules()}
        self.params = list(root.named_parameters())
        self.param_names = {id(p): n for n, p in self.params}
        self.stack = []          # names of the modules whose forward is running
        self.calls = []          # {"module", "params"} in call order
        self.open_calls = []     # index into calls, parallel to stack
        self.mode = None
        self.forward_done = False
        self.backward_done = False
        self.grad_order = []
        self.seen_grad = set()
        self.backward_events = []
        self._grad_nodes = []    # keeps the AccumulateGrad nodes (and their hooks) alive

    def fail(self, msg):
        self.rec.fail(msg)

    # -- the static facts --------------------------------------------------------------------
    def tree(self):
        out = []
        for name, m in self.root.named_modules():
            # A tied weight (lm_head.weight is embed_tokens.weight) under the one name
            # named_parameters() gives it, so the param list and the tree agree.
            own = [self.param_names.get(id(p), name + ("." if name else "") + pn)
                   for pn, p in m.named_parameters(recurse=False)]
            out.append({"name": name, "type": type(m).__name__, "params": own})
        return out

    def param_entries(self):
        return [[n, param_shape(p)] + ([] if p.requires_grad else [False]) for n, p in self.params]

    def param_dtypes(self):
        return {n: str(p.dtype).replace("torch.", "") for n, p in self.params}

    # -- gradient hooks ----------------------------------------------------------------------
    def install_grad_hooks(self):
        for name, p in self.params:
            if not p.requires_grad:
                continue
            if hasattr(p, "register_post_accumulate_grad_hook"):
                p.register_post_accumulate_grad_hook(lambda _p, n=name: self.grad_ready(n))
            else:
                node = p.expand_as(p).grad_fn.next_functions[0][0]
                node.register_hook(lambda *_unused, n=name: self.grad_ready(n))
                self._grad_nodes.append(node)

    def grad_ready(self, name):
        if self.backward_done or not self.rec.active():
            return
        try:
            if name not in self.seen_grad:
                self.seen_grad.add(name)
                self.grad_order.append(name)
            self.backward_events.append({"grad": name})
        except Exception as e:
            self.fail("recording a gradient hook: %r" % (e,))

    def pre_backward(self, module):
        if not self.backward_done and self.rec.active():
            self.backward_events.append({"pre_backward": module})

    def end_backward(self):
        self.backward_done = True

    # -- forward hooks -----------------------------------------------------------------------
    def pre_forward(self, module):
        if self.forward_done:
            return
        name = self.module_names.get(id(module))
        if name is None:
            return
        if module is self.root and self.mode is None:
            self.mode = _UseMode(self)
            self.mode.__enter__()
        self.stack.append(name)
        self.open_calls.append(len(self.calls))
        self.calls.append({"module": name, "params": []})

    def post_forward(self, module, output):
        if self.forward_done or self.module_names.get(id(module)) is None or not self.stack:
            return None
        self.stack.pop()
        # The call's end: how many calls began while it ran (its post-forward hook, which is
        # where DeepSpeed releases the module's params).
        idx = self.open_calls.pop()
        self.calls[idx]["inner"] = len(self.calls) - idx - 1
        wrapped = self._wrap_outputs(self.module_names[id(module)], output)
        if module is self.root:
            self.forward_done = True
            if self.mode is not None:
                self.mode.__exit__(None, None, None)
                self.mode = None
        return wrapped

    def saw(self, args, kwargs):
        if not self.open_calls:
            return
        call = self.calls[self.open_calls[-1]]
        for a in _flat(args, kwargs):
            if isinstance(a, torch.nn.Parameter):
                n = self.param_names.get(id(a))
                if n is not None and n not in call["params"]:
                    call["params"].append(n)

    def _wrap_outputs(self, name, output):
        if not torch.is_grad_enabled():
            return None
        if isinstance(output, torch.Tensor):
            if output.requires_grad:
                return _PreBackward.apply(self, name, output)
            return None
        if isinstance(output, tuple) and type(output) is tuple:
            idx = [i for i, t in enumerate(output)
                   if isinstance(t, torch.Tensor) and t.requires_grad]
            if not idx:
                return None
            res = _PreBackward.apply(self, name, *[output[i] for i in idx])
            res = res if isinstance(res, tuple) else (res,)
            out = list(output)
            for i, t in zip(idx, res):
                out[i] = t
            return tuple(out)
        return None  # dicts and model-output classes: left as they are

    def module_map(self):
        own = {m["name"]: set(m["params"]) for m in self.tree()}
        forward = []
        for c in self.calls:
            ext = [p for p in c["params"] if p not in own.get(c["module"], set())]
            entry = {"module": c["module"], "params": c["params"], "external": ext}
            if "inner" in c:  # absent for a call whose post-forward never ran
                entry["inner"] = c["inner"]
            forward.append(entry)
        return {"format": "zerosim-module-map", "version": 1, "modules": self.tree(),
                "forward": forward, "backward": self.backward_events,
                "param_dtypes": self.param_dtypes()}


def _flat(args, kwargs):
    todo = list(args) + list(kwargs.values())
    while todo:
        a = todo.pop(0)
        if isinstance(a, (list, tuple)):
            todo[0:0] = list(a)
        else:
            yield a
