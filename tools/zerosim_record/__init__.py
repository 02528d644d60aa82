"""zerosim_record: records a PyTorch / DeepSpeed training job so zerosim can check itself against it.

Two lines in a training script (before the model's first forward; before deepspeed.initialize to
see the init broadcasts too):

    import zerosim_record
    rec = zerosim_record.enable("rec/", engine=model_engine)   # or model=..., optimizer=...

or no change at all: `python -m zerosim_record -o rec/ train.py ARGS` (also under torchrun).
The recording is written when the process exits (or at `rec.stop()`): per rank, the collectives in
zerosim's collective-log format, the param list with the recorded gradient order, the module map,
memory counters on CUDA and a manifest. Standard library and torch only; DeepSpeed is never imported.
"""

import atexit

from .recorder import FORMAT_VERSION, Recorder

__all__ = ["enable", "Recorder", "FORMAT_VERSION"]


def enable(out_dir, model=None, optimizer=None, engine=None, memory=True, auto_optimizer=False,
           ds_config=None):
    """Starts recording into `out_dir` and returns the Recorder (stopped and written at exit).

    engine: a DeepSpeed engine (its backward and step bound the phases); optimizer: a torch
    optimizer whose step is the step phase; model: the root module (default: the first module
    whose forward runs); auto_optimizer: attach every torch optimizer built from now on;
    ds_config: the job's ds_config (a dict or a path; default: the engine's), written beside the
    manifest as ds_config.rankR.json for `zerosim validate --recording`."""
    rec = Recorder(out_dir, model=model, optimizer=optimizer, engine=engine, memory=memory,
                   auto_optimizer=auto_optimizer, ds_config=ds_config)
    rec.start()
    atexit.register(rec.stop)
    return rec
