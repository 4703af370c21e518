"""The fused CPU kernels find their BLAS at run time (model_core/src/kernels/gemm.h). Without one
(TENSORSCOPE_BLAS=none, or a library that does not load) `--version` says the kernels are off and
every THSA layer computes the same outputs through its ATen formulation. The projections' float32
GEMM (oneDNN's sgemm where libdnnl.so.2 loads) is reported the same way: it is on by default and
gives the same outputs as torch::linear, which TENSORSCOPE_GEMM=blas runs instead.

usage: /usr/bin/python3 test_blas_fallback.py TENSORSCOPE_BINARY WORK_DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

import safetensors_py as st  # noqa: E402

binary, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
passed = failed = 0


def expect(name, ok, detail=""):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    passed, failed = passed + ok, failed + (not ok)


def run(args, blas=None, gemm=None):
    env = dict(os.environ)
    env.pop("TENSORSCOPE_BLAS", None)
    env.pop("TENSORSCOPE_GEMM", None)
    if blas is not None:
        env["TENSORSCOPE_BLAS"] = blas
    if gemm is not None:
        env["TENSORSCOPE_GEMM"] = gemm
    return subprocess.run([binary] + args, env=env, capture_output=True, text=True)


v = run(["--version"])
expect("version-fused-on", v.returncode == 0 and "fused CPU kernels: on (sgemm_ from " in v.stdout, v.stdout)
v = run(["--version"], "none")
expect("version-fused-off", "fused CPU kernels: off, ATen formulation instead: BLAS none (TENSORSCOPE_BLAS=none)"
       in v.stdout, v.stdout)
v = run(["--version"], "/nonexistent/libnoblas.so")
expect("version-blas-does-not-load", "TENSORSCOPE_BLAS=/nonexistent/libnoblas.so does not load" in v.stdout, v.stdout)
v = run(["--version"])
has_dnnl = "projections (float32 GEMM): dnnl_sgemm from " in v.stdout
expect("version-projection-gemm-on-by-default", has_dnnl or "oneDNN's sgemm none" in v.stdout, v.stdout)
print("(projection GEMM by default: %s)" % ("oneDNN" if has_dnnl else "none here"))
v = run(["--version"], gemm="dnnl")
expect("version-projection-gemm-on-request", ("projections (float32 GEMM): dnnl_sgemm from " in v.stdout) == has_dnnl,
       v.stdout)
v = run(["--version"], gemm="blas")
expect("version-projection-gemm-off", "projections (float32 GEMM): ATen's (the BLAS above); oneDNN's sgemm off "
       "(TENSORSCOPE_GEMM=blas)" in v.stdout, v.stdout)
v = run(["--version"], gemm="/nonexistent/libnodnnl.so")
expect("version-projection-gemm-does-not-load", "TENSORSCOPE_GEMM=/nonexistent/libnodnnl.so does not load" in v.stdout,
       v.stdout)

for preset in ("core:thsa", "skip_left", "skip_right", "core:low_rank", "thsa_linear", "mhsa"):
    for causal in (True, False):
        tag = preset.replace(":", "_") + ("_causal" if causal else "")
        spec_path, w, x, y_on, y_off = (os.path.join(work, tag + e) for e in
                                        (".json", ".w.safetensors", ".x.safetensors", ".on.safetensors",
                                         ".off.safetensors"))
        spec = json.loads(run(["spec", "preset", preset]).stdout)
        spec["causal"] = causal
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        made = run(["attention", "--spec", spec_path, "--seed", "3", "--save-weights", w])
        st.save(x, {"x": torch.randn(2, 40, spec["sizes"]["F"], generator=torch.Generator().manual_seed(1))})
        a = run(["attention", "--spec", spec_path, "--weights", w, "--input", x, "--output", y_on])
        b = run(["attention", "--spec", spec_path, "--weights", w, "--input", x, "--output", y_off], "none")
        if made.returncode or a.returncode or b.returncode:
            expect(tag, False, made.stderr + a.stderr + b.stderr)
            continue
        ya, yb = st.load(y_on)[0]["y"].double(), st.load(y_off)[0]["y"].double()
        err = ((ya - yb).abs().max() / ya.abs().max()).item()
        expect(tag + " fused == ATen without a BLAS (rel %.1e)" % err, err < 1e-5, "rel %.2e" % err)
        c = run(["attention", "--spec", spec_path, "--weights", w, "--input", x, "--output", y_off], gemm="blas")
        if c.returncode:
            expect(tag + " projections", False, c.stderr)
            continue
        yc = st.load(y_off)[0]["y"].double()
        err = ((ya - yc).abs().max() / ya.abs().max()).item()
        expect(tag + " projection GEMM == torch::linear (rel %.1e)" % err, err < 1e-5, "rel %.2e" % err)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
