#!/usr/bin/env bash
# Issue 40: `tensorscope --version` says which OpenBLAS kernels run and why, and the start-up
# restart with OPENBLAS_CORETYPE works end to end: argv and the environment survive it, a value the
# user set is kept, the check's fallback and TENSORSCOPE_NO_REEXEC behave. This test covers the
# choice itself, so it unsets OPENBLAS_CORETYPE (and the other variables involved) for the commands
# that need it unset; it passes with or without them set around it. TENSORSCOPE_BLAS_TEST
# (docs/cpu-kernels.md) stands in for a CPU on which OpenBLAS falls back.
# usage: test_blas_kernels.sh TENSORSCOPE_BINARY
set -u
BIN=$1
# shellcheck source=check_lib.sh
source "$(dirname "$0")/check_lib.sh"

clean=(env -u OPENBLAS_CORETYPE -u TENSORSCOPE_BLAS_CHOICE -u TENSORSCOPE_NO_REEXEC -u TENSORSCOPE_BLAS_TEST)
if ! "${clean[@]}" "$BIN" --version | grep -q "^BLAS: OpenBLAS"; then
  echo "skip: the BLAS is not OpenBLAS ($("$BIN" --version | grep '^BLAS'))"
  exit 0
fi
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)" "
has() { [[ "$flags" == *" $1 "* ]]; }

# The library's own choice, or Tensorscope's when it is better: either way the line says which.
check own-or-chosen 0 "^BLAS: OpenBLAS [0-9.]+, [A-Za-z0-9]+ kernels, (chosen by Tensorscope; OpenBLAS detected [A-Za-z0-9]+|OpenBLAS's own choice, the best this build has for this CPU) \(OpenBLAS" \
  -- "${clean[@]}" "$BIN" --version
check user-value-kept 0 "^BLAS: OpenBLAS [0-9.]+, Prescott kernels, set by OPENBLAS_CORETYPE in the environment" \
  -- "${clean[@]}" OPENBLAS_CORETYPE=Prescott "$BIN" --version
check unknown-user-value 0 "set by OPENBLAS_CORETYPE in the environment \(OpenBLAS does not know 'NoSuchCore' and chose itself\)" \
  -- "${clean[@]}" OPENBLAS_CORETYPE=NoSuchCore "$BIN" --version

if has avx2 && has fma; then
  # As on a CPU where OpenBLAS falls back to Prescott: a restart with better kernels, the same
  # arguments (--threads 1) and environment (TENSORSCOPE_THREADS for the default of a later call).
  check restart-chosen 0 "^BLAS: OpenBLAS [0-9.]+, (Cooperlake|SapphireRapids|SkylakeX|Zen|Haswell) kernels, chosen by Tensorscope; OpenBLAS detected Prescott" \
    -- "${clean[@]}" TENSORSCOPE_BLAS_TEST=detected=Prescott "$BIN" --version
  check restart-keeps-argv 0 "threads: 1 intra-op" -- "${clean[@]}" TENSORSCOPE_BLAS_TEST=detected=Prescott "$BIN" --threads 1 --version
  check restart-keeps-environment 0 "threads: 1 intra-op" \
    -- "${clean[@]}" TENSORSCOPE_THREADS=1 TENSORSCOPE_BLAS_TEST=detected=Prescott "$BIN" --version
  # A command that computes, on the chosen kernels, and its output.
  check restart-runs-a-command 0 "diagram check core:low_rank: ok" \
    -- "${clean[@]}" TENSORSCOPE_BLAS_TEST=detected=Prescott "$BIN" diagram --preset core:low_rank --check
  # The check disagreeing: one line of warning, then OpenBLAS's own choice; no loop.
  out=$("${clean[@]}" TENSORSCOPE_BLAS_TEST=detected=Prescott,check-fails "$BIN" --version 2>&1)
  rc=$?
  warnings=$(grep -c "failed the start-up check" <<<"$out")
  if [ "$rc" -eq 0 ] && [ "$warnings" -eq 1 ] \
    && grep -qE "^BLAS: .* kernels, OpenBLAS's own choice: Tensorscope's choice [A-Za-z]+ disagreed with a reference GEMM at start-up" <<<"$out"; then
    ok check-fails-falls-back
  else
    bad "check-fails-falls-back: exit $rc, $warnings warning line(s)" "$out"
  fi
  check no-reexec 0 "OpenBLAS's own choice; [A-Za-z]+ would be faster \(TENSORSCOPE_NO_REEXEC is set, so no restart\)" \
    -- "${clean[@]}" TENSORSCOPE_NO_REEXEC=1 TENSORSCOPE_BLAS_TEST=detected=Prescott "$BIN" --version
  # A value the user set is never overridden, even on a CPU where OpenBLAS falls back.
  check user-value-kept-on-fallback 0 "Prescott kernels, set by OPENBLAS_CORETYPE in the environment" \
    -- "${clean[@]}" OPENBLAS_CORETYPE=Prescott TENSORSCOPE_BLAS_TEST=detected=Prescott "$BIN" --version
else
  echo "skip: no AVX2/FMA, no better kernels than Prescott to choose on this CPU"
fi
finish
