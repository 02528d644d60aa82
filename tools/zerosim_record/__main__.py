"""python -m zerosim_record -o DIR SCRIPT [ARGS...]: runs SCRIPT as __main__ while recording.

Under torchrun: `torchrun --nproc_per_node 2 -m zerosim_record -o rec/ train.py ARGS`.
The model is the first module whose forward runs; a DeepSpeed engine is found by wrapping
deepspeed.initialize when DeepSpeed is installed (its backward and step then bound the phases).
"""

import argparse
import importlib.util
import runpy
import sys

from . import enable


def _wrap_deepspeed(rec):
    if importlib.util.find_spec("deepspeed") is None:
        return
    import deepspeed  # only when the job can import it anyway

    original = deepspeed.initialize

    def initialize(*args, **kwargs):
        result = original(*args, **kwargs)
        try:
            rec.attach_engine(result[0])
        except Exception as e:
            rec.fail("attaching to the DeepSpeed engine: %r" % (e,))
        return result

    deepspeed.initialize = initialize


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m zerosim_record",
        description="Record a training script's collectives, parameters, gradient order, module "
                    "map and memory for `zerosim check --measured DIR`.")
    ap.add_argument("-o", "--output", required=True, help="recording directory (created)")
    ap.add_argument("--no-memory", action="store_true", help="skip the CUDA memory counters")
    ap.add_argument("script", help="the training script, run as __main__")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    a = ap.parse_args(argv)
    rec = enable(a.output, memory=not a.no_memory, auto_optimizer=True)
    _wrap_deepspeed(rec)
    sys.argv = [a.script] + a.args
    try:
        runpy.run_path(a.script, run_name="__main__")
    finally:
        rec.stop()


if __name__ == "__main__":
    main()
