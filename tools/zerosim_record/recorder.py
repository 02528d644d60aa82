"""The recorder: phases, step counting, and the files of one rank.

Phases follow the hooks: `init` until the model's first forward, `forward` from a forward of the
root module, `backward` inside torch.autograd.backward (or the DeepSpeed engine's backward, which
also runs its end-of-step reduction: engine.py, DeepSpeedEngine.backward -> allreduce_gradients),
`step` inside the engine's or optimizer's step. micro_step counts backward passes since the last
optimizer step; a step's collectives carry the last micro-step's index, as zerosim's log does.
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist

from .collectives import CollectiveTap
from .modules import ModuleTracker

FORMAT_VERSION = 1
_LOG_KEYS = ["rank", "step", "micro_step", "phase", "op", "numel", "out_numel", "dtype",
             "group_size", "reduce_op", "dst", "src"]


def _write_atomic(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _jsonl(rows):
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)


class Recorder:
    def __init__(self, out_dir, model=None, optimizer=None, engine=None, memory=True,
                 auto_optimizer=False, ds_config=None):
        self.out_dir = out_dir
        self.ds_config = ds_config  # a dict or a path; default: the engine's
        self.auto_optimizer = auto_optimizer
        self.model = model
        self.engine = None
        self.memory_enabled = memory
        self.phase = "init"
        self.step = 0
        self.micro = 0            # backward passes since the last optimizer step
        self._backward_depth = 0
        self._step_depth = 0
        self._boundary = True
        self.collectives = []
        self.others = []
        self.memory = []
        self.error = None
        self.stopped = False
        self.paused = False
        self.rank = None
        self.world_size = None
        self.tracker = None
        self._tap = CollectiveTap(dist, self)
        self._undo = []
        self._started = time.perf_counter()
        if engine is not None:
            self.attach_engine(engine)
        if optimizer is not None:
            self.attach_optimizer(optimizer)

    # -- state -------------------------------------------------------------------------------
    def active(self):
        return self.error is None and not self.stopped and not self.paused

    def pause(self):
        """Stops recording without removing the hooks (they then do nothing); resume() restarts."""
        self.paused = True

    def resume(self):
        self.paused = False

    def fail(self, msg):
        if self.error is None:
            self.error = msg
            print("zerosim_record: recording stopped: " + msg, file=sys.stderr)

    def _note_rank(self):
        if self.rank is None and dist.is_available() and dist.is_initialized():
            self.rank = dist.get_rank()
            self.world_size = dist.get_world_size()

    def _micro_step(self):
        return max(self.micro - 1, 0) if self.phase == "step" else self.micro

    # -- install -----------------------------------------------------------------------------
    def start(self):
        self._tap.install()
        import torch.nn.modules.module as mm
        h1 = mm.register_module_forward_pre_hook(self._on_pre_forward)
        h2 = mm.register_module_forward_hook(self._on_forward)
        self._undo += [h1.remove, h2.remove]
        original = torch.autograd.backward

        def backward(*args, **kwargs):
            self._enter_backward()
            try:
                return original(*args, **kwargs)
            finally:
                self._leave_backward()

        torch.autograd.backward = backward
        self._undo.append(lambda: setattr(torch.autograd, "backward", original))
        if self.auto_optimizer:  # `python -m zerosim_record`: every optimizer the script builds
            init = torch.optim.Optimizer.__init__
            rec = self

            def optimizer_init(opt, *args, **kwargs):
                init(opt, *args, **kwargs)
                rec._guard("attaching to an optimizer", rec.attach_optimizer, opt)

            torch.optim.Optimizer.__init__ = optimizer_init
            self._undo.append(lambda: setattr(torch.optim.Optimizer, "__init__", init))
        return self

    def _patch_method(self, obj, name, before, after):
        original = getattr(obj, name)

        def method(*args, **kwargs):
            before()
            try:
                return original(*args, **kwargs)
            finally:
                after()

        setattr(obj, name, method)
        self._undo.append(lambda: setattr(obj, name, original))

    def attach_engine(self, engine):
        """A DeepSpeed engine: its backward and step bound the phases; its module is the model."""
        self.engine = engine
        if self.model is None:
            self.model = getattr(engine, "module", None)
        self._patch_method(engine, "backward", self._enter_backward, self._leave_backward)
        self._patch_method(engine, "step", self._enter_step, self._leave_step)

    def attach_optimizer(self, optimizer):
        self._patch_method(optimizer, "step", self._enter_step, self._leave_step)

    def stop(self):
        """Removes every hook and wrapper and writes this rank's files. Safe to call twice."""
        if self.stopped:
            return
        self._note_rank()
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:
                pass
        self._tap.uninstall()
        self.stopped = True
        try:
            self.write()
        except Exception as e:
            print("zerosim_record: could not write the recording: %r" % (e,), file=sys.stderr)

    # -- phase transitions -------------------------------------------------------------------
    def _guard(self, what, fn, *args):
        if not self.active():
            return None
        try:
            return fn(*args)
        except Exception as e:
            self.fail("%s: %r" % (what, e))
            return None

    def _on_pre_forward(self, module, _inputs):
        return self._guard("a forward pre-hook", self._pre_forward, module)

    def _pre_forward(self, module):
        if self.model is None:
            self.model = module  # the first module called is the outermost: the model
        if module is self.model:
            self._note_rank()
            if self.tracker is None:
                self.tracker = ModuleTracker(self, module)
                self.tracker.install_grad_hooks()
            if self._backward_depth == 0 and self._step_depth == 0:
                self.phase = "forward"
                self._snapshot("forward_begin")
        if self.tracker is not None:
            self.tracker.pre_forward(module)
        return None

    def _on_forward(self, module, _inputs, output):
        return self._guard("a forward hook", self._post_forward, module, output)

    def _post_forward(self, module, output):
        wrapped = self.tracker.post_forward(module, output) if self.tracker else None
        if module is self.model:
            self._snapshot("forward_end")
        return wrapped

    def _enter_backward(self):
        if not self.active():
            return
        self._backward_depth += 1
        if self._backward_depth == 1:
            self.phase = "backward"
            self._snapshot("backward_begin")

    def _leave_backward(self):
        if not self.active():
            return
        self._backward_depth -= 1
        if self._backward_depth == 0:
            self._snapshot("backward_end")
            self.micro += 1
            if self.tracker is not None:
                self.tracker.end_backward()

    def _enter_step(self):
        if not self.active():
            return
        self._step_depth += 1
        if self._step_depth == 1:
            self._boundary = True
            if self.engine is not None and hasattr(self.engine, "is_gradient_accumulation_boundary"):
                self._boundary = bool(self.engine.is_gradient_accumulation_boundary())
            self.phase = "step"
            self._snapshot("step_begin")

    def _leave_step(self):
        if not self.active():
            return
        self._step_depth -= 1
        if self._step_depth == 0:
            self._snapshot("step_end")
            if self._boundary:
                self.step += 1
                self.micro = 0

    # -- records -----------------------------------------------------------------------------
    def collective(self, rec, modelled):
        self._note_rank()
        op = rec.pop("torch_op")
        row = {"rank": self.rank if self.rank is not None else 0, "step": self.step,
               "micro_step": self._micro_step(), "phase": self.phase}
        if modelled:
            from .collectives import MODELLED
            row["op"] = MODELLED[op]
            row.update(rec)
            self.collectives.append({k: row[k] for k in _LOG_KEYS if k in row})
        else:
            row["op"] = op
            row.update(rec)
            self.others.append(row)

    def _snapshot(self, event):
        if not self.memory_enabled or not torch.cuda.is_available() or \
                not torch.cuda.is_initialized():
            return
        free, total = torch.cuda.mem_get_info()
        self.memory.append({"step": self.step, "micro_step": self._micro_step(), "event": event,
                            "allocated": torch.cuda.memory_allocated(),
                            "max_allocated": torch.cuda.max_memory_allocated(),
                            "reserved": torch.cuda.memory_reserved(),
                            "device_free": free, "device_total": total})

    # -- output ------------------------------------------------------------------------------
    def job_ds_config(self):
        """The job's ds_config as a dict, or None: the one given to the recorder, else the
        engine's. DeepSpeedEngine keeps the parsed dict in _config._param_dict (runtime/config.py,
        DeepSpeedConfig.__init__) and the argument it was given in .config (engine.py,
        DeepSpeedEngine.__init__: a dict, a path or None)."""
        cfg = self.ds_config
        if cfg is None and self.engine is not None:
            cfg = getattr(getattr(self.engine, "_config", None), "_param_dict", None)
            if cfg is None:
                cfg = getattr(self.engine, "config", None)
        if isinstance(cfg, (str, os.PathLike)):
            with open(cfg) as f:
                cfg = json.load(f)
        return cfg if isinstance(cfg, dict) else None

    def write(self):
        rank = self.rank if self.rank is not None else int(os.environ.get("RANK", "0"))
        world = self.world_size if self.world_size is not None else \
            int(os.environ.get("WORLD_SIZE", "1"))
        os.makedirs(self.out_dir, exist_ok=True)
        for row in self.collectives:  # a rank learnt late (first call before init_process_group)
            row["rank"] = rank
        base = os.path.join(self.out_dir, "%s.rank%d.%s")
        _write_atomic(base % ("collectives", rank, "jsonl"), _jsonl(self.collectives))
        _write_atomic(base % ("other_collectives", rank, "jsonl"), _jsonl(self.others))
        _write_atomic(base % ("memory", rank, "jsonl"), _jsonl(self.memory))
        if self.tracker is not None:
            params = {"format": "zerosim-param-list", "version": 1,
                      "params": self.tracker.param_entries(),
                      "grad_order": self.tracker.grad_order}
            if not self.tracker.grad_order:
                del params["grad_order"]  # no backward ran: zerosim's default order applies
            module_map = self.tracker.module_map()
            if module_map["forward"]:  # param list v2: what stage 3 fetches per module call
                params["version"] = 2
                params["modules"] = module_map["modules"]
                params["forward"] = module_map["forward"]
            _write_atomic(base % ("params", rank, "json"), json.dumps(params, indent=1) + "\n")
            _write_atomic(base % ("modules", rank, "json"),
                          json.dumps(module_map, indent=1) + "\n")
        ds_file = None
        try:
            cfg = self.job_ds_config()
            if cfg is not None:
                ds_file = "ds_config.rank%d.json" % rank
                _write_atomic(os.path.join(self.out_dir, ds_file),
                              json.dumps(cfg, indent=1, sort_keys=True) + "\n")
        except Exception as e:  # an unreadable or unserialisable config: recorded as absent
            ds_file = None
            print("zerosim_record: could not record the ds_config: %r" % (e,), file=sys.stderr)
        manifest = {
            "format": "zerosim-recording", "version": FORMAT_VERSION, "rank": rank,
            "world_size": world, "steps": self.step, "collectives": len(self.collectives),
            "other_collectives": len(self.others), "complete": self.error is None,
            "error": self.error, "torch": torch.__version__,
            "device": "cuda" if torch.cuda.is_available() and torch.cuda.is_initialized()
            else "cpu",
            "model_found": self.tracker is not None,
            "ds_config": ds_file,
            "recorded_s": round(time.perf_counter() - self._started, 3),
        }
        _write_atomic(base % ("recording", rank, "json"), json.dumps(manifest, indent=1) + "\n")
