"""Records every torch.distributed collective the job issues, by wrapping the module's functions.

DeepSpeed's communication layer looks the functions up on the module at call time
(deepspeed/comm/torch.py, TorchBackend: `return torch.distributed.all_reduce(...)`), so replacing
the attributes of `torch.distributed` catches its calls as well as the user's. A name imported
before recording starts (`from torch.distributed import all_reduce`) is not seen: say so in the docs.

The wrapper reads the arguments (sizes, dtype, group, op, root) and calls the original; it issues no
collective and allocates nothing on the device.
"""

import inspect

# torch.distributed function -> the name zerosim's collective log uses (scenarios/README.md,
# "Collective log"). The private *_base spellings are what DeepSpeed calls on older torch
# (deepspeed/comm/torch.py: all_gather_into_tensor falls back to _all_gather_base).
MODELLED = {
    "all_reduce": "all_reduce",
    "reduce": "reduce",
    "broadcast": "broadcast",
    "all_gather_into_tensor": "all_gather_into_tensor",
    "_all_gather_base": "all_gather_into_tensor",
    "reduce_scatter_tensor": "reduce_scatter_tensor",
    "_reduce_scatter_base": "reduce_scatter_tensor",
}
# Collectives zerosim does not model: recorded apart, so a comparison can name them.
OTHER = [
    "all_gather", "reduce_scatter", "all_to_all", "all_to_all_single", "barrier", "gather",
    "scatter", "all_gather_object", "broadcast_object_list", "send", "recv", "isend", "irecv",
]


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def _reduce_op_name(op, dist):
    if op is None:
        return "sum"  # torch's default for every reducing collective
    for name in ("SUM", "MAX", "MIN", "PRODUCT", "AVG", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        known = getattr(getattr(dist, "ReduceOp", None), name, None)
        try:
            if known is not None and op == known:
                return name.lower()
        except Exception:  # a ReduceOp that compares only with its own kind
            continue
    return str(op).split(".")[-1].lower()


class CollectiveTap:
    """Installs wrappers on torch.distributed; `sink(record)` receives one dict per call."""

    def __init__(self, dist, sink):
        self._dist = dist
        self._sink = sink
        self._originals = {}

    def install(self):
        for name in list(MODELLED) + OTHER:
            fn = getattr(self._dist, name, None)
            if fn is None or name in self._originals:
                continue
            self._originals[name] = fn
            setattr(self._dist, name, self._wrap(name, fn))

    def uninstall(self):
        for name, fn in self._originals.items():
            setattr(self._dist, name, fn)
        self._originals.clear()

    def _group_size(self, group):
        try:
            return self._dist.get_world_size(group) if group is not None else \
                self._dist.get_world_size()
        except Exception:  # an uninitialised default group: the call itself will raise
            return 1

    def _group_rank(self, group, global_rank):
        if group is None or global_rank is None:
            return global_rank
        for name in ("get_group_rank", "_get_group_rank"):
            fn = getattr(self._dist, name, None) or getattr(
                getattr(self._dist, "distributed_c10d", None), name, None)
            if fn is not None:
                try:
                    return int(fn(group, global_rank))
                except Exception:
                    pass
        return global_rank

    def _describe(self, name, args):
        """The log fields of one call, from its bound arguments."""
        a = args.arguments
        group = a.get("group")
        rec = {"torch_op": name, "group_size": self._group_size(group)}
        if name in ("all_reduce", "reduce", "broadcast"):
            t = a["tensor"]
            rec.update(numel=t.numel(), out_numel=t.numel(), dtype=_dtype_name(t))
            if name != "broadcast":
                rec["reduce_op"] = _reduce_op_name(a.get("op"), self._dist)
            if name == "reduce":
                rec["dst"] = self._group_rank(group, a.get("dst"))
            if name == "broadcast":
                rec["src"] = self._group_rank(group, a.get("src"))
        elif name in ("all_gather_into_tensor", "_all_gather_base", "reduce_scatter_tensor",
                      "_reduce_scatter_base"):
            out = a.get("output_tensor", a.get("output"))
            inp = a.get("input_tensor", a.get("input"))
            rec.update(numel=inp.numel(), out_numel=out.numel(), dtype=_dtype_name(inp))
            if "reduce_scatter" in name:
                rec["reduce_op"] = _reduce_op_name(a.get("op"), self._dist)
        else:
            tensors = [v for v in a.values() if hasattr(v, "numel") and hasattr(v, "dtype")]
            if tensors:
                rec.update(numel=tensors[0].numel(), dtype=_dtype_name(tensors[0]))
        return rec

    def _wrap(self, name, fn):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        sink = self._sink

        def wrapper(*args, **kwargs):
            if sig is not None and sink.active():
                try:
                    bound = sig.bind(*args, **kwargs)
                    bound.apply_defaults()
                    sink.collective(self._describe(name, bound), modelled=name in MODELLED)
                except Exception as e:  # never break the user's call
                    sink.fail("reading the arguments of torch.distributed.%s: %r" % (name, e))
            return fn(*args, **kwargs)

        wrapper.__wrapped__ = fn
        wrapper.__name__ = getattr(fn, "__name__", name)
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        return wrapper
