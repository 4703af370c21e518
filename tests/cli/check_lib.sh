# Shared by the CLI test scripts (source it): counters, ok/bad, and
#   check NAME EXPECTED_RC PATTERN -- command...
# which runs the command, and passes when it exits with EXPECTED_RC and its output (stdout and
# stderr) matches the extended regular expression PATTERN. `finish` prints the totals and
# returns non-zero when anything failed.
pass=0
fail=0

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | head -20; fail=$((fail + 1)); }

check() {
  local name=$1 want=$2 pattern=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then bad "$name: exit $rc, expected $want" "$out"; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then bad "$name: output lacks /$pattern/" "$out"; return; fi
  ok "$name"
}

finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
