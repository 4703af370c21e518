#!/usr/bin/env python3
"""The tiny copy-task run config the sweep tests start from (a two-layer MHSA decoder, F = 16, that
trains in about a second), printed as JSON.
usage: tiny_copy_config.py SPEC_JSON STEPS EVAL_INTERVAL CHECKPOINT_INTERVAL INSPECT_INTERVAL"""
import json
import sys

spec_path, steps, every_eval, every_checkpoint, every_inspect = sys.argv[1], *map(int, sys.argv[2:6])
spec = json.load(open(spec_path))
spec["sizes"].update({"F": 16, "H": 2, "D": 8, "R": 16, "seq_len": 24})
spec["causal"] = True
print(json.dumps({
    "format": "tensorscope.run_config", "version": 1,
    "model": {"kind": "decoder", "layers": 2, "d_model": 16, "ffn_multiplier": 2, "attention": spec},
    "task": {"name": "copy", "seq_len": 24, "algorithmic_length": 5, "seed": 1},
    "train": {"steps": steps, "batch": 4, "warmup": 2, "eval_interval": every_eval, "eval_examples": 8,
              "checkpoint_interval": every_checkpoint, "inspect_interval": every_inspect, "seed": 1}}, indent=2))
