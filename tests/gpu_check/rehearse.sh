#!/usr/bin/env bash
# The GPU check's rehearsal on this CPU (docs/gpu-results.md): both calls of
# tools/gpu/gpu-check against the CUDA double, with stand-ins for nvidia-smi
# and compute-sanitizer, on this build, whose GPU binaries are removed first
# so the first call must build each. Fails on any step that failed for a
# reason other than the double's lack of a kernel body, on a header or
# library the GPU image lacks, on a missing row, and if a budget-cut run
# leaves no report.
#
#   rehearse.sh BUILD NCCL_LIB TOOLKIT   (the environment loads the double)
set -uo pipefail

build=$(cd "$1" && pwd)
nccl_lib=$2
toolkit=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
tmp=$(mktemp -d /tmp/gpu-check-rehearsal.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export PATH="$root/tests/gpu_check/bin:$PATH"
failures=0
start=$(date +%s)
say() { echo "[rehearsal $(($(date +%s) - start))s] $*"; }
fail() {
  echo "REHEARSAL FAILED: $*"
  failures=$((failures + 1))
}
# The double's message for a kernel it has no host body for: the one failure
# that is the GPU's to judge, not the script's.
gpu_only='has no host body registered with the double'

# ---- the dependencies folder, as a development machine fills it ----
export MSCCLPP_GPU_DEPS=$tmp/deps MSCCLPP_NCCL_LIB_PATH=$nccl_lib
tools/gpu/prepare-gpu-deps "$tmp/deps" >"$tmp/deps.log" 2>&1 || fail "prepare-gpu-deps: $(tail -3 "$tmp/deps.log")"

# ---- a fresh configuration, as the first call makes on a bare machine ----
say "configure in a scratch folder"
mkdir -p "$tmp/out0"
if ! OUT=$tmp/out0 tools/gpu/gpu-check --build "$tmp/configure" --steps configure >"$tmp/configure.out" 2>&1; then
  cat "$tmp/configure.out"
  fail "gpu-check could not configure a fresh build with its own arguments"
fi
rm -rf "$tmp/configure"

# ---- the GPU steps' binaries, found without gpu-check's help, removed ----
python3 - "$build" >"$tmp/binaries" <<'EOF' || fail "could not list the gpu suite's binaries"
import glob, json, os, sys
build = sys.argv[1]
with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
    tests = json.load(f)
found = set(p for p in glob.glob(os.path.join(build, "tests", "gpu", "backend", "bench_gpu_*")) if os.path.isfile(p))
for t in tests:
    if any(s.endswith(":gpu") or s == "gpu" for s in t["suite"]):
        found.update(a for a in t["cmd"] if a.startswith(build + os.sep) and os.access(a, os.X_OK))
print("\n".join(sorted(found)))
EOF
[ "$(wc -l <"$tmp/binaries")" -ge 5 ] || fail "only $(wc -l <"$tmp/binaries") GPU binaries found in $build"
xargs rm -f <"$tmp/binaries"

# ---- the two calls, as the docs give them ----
say "first call: configure (reused), build, tests"
mkdir -p "$tmp/out1" "$tmp/out2"
# The two slowest gpu tests are skipped: CI runs their sources against the
# double already (gpu_double_backend, gpu_double_monitor); their binaries are
# still built and checked below.
skipped=gpu_backend,gpu_monitor
OUT=$tmp/out1 tools/gpu/gpu-check --build "$build" --wait-timeout 30 --skip-tests $skipped >"$tmp/call1.out" 2>&1
say "second call: --no-build (sanitizers, benchmarks)"
OUT=$tmp/out2 tools/gpu/gpu-check --build "$build" --no-build --quick --wait-timeout 30 >"$tmp/call2.out" 2>&1

while read -r bin; do
  [ -x "$bin" ] || fail "the first call did not build $bin"
done <"$tmp/binaries"

# judge CALL NAMES...: every expected row is there, printed as it ended
# (before the final report), and every failure is the double's.
judge() {
  local call=$1
  shift
  local out=$tmp/$call.out report=$tmp/out${call#call}/gpu-results.md logs=$tmp/logs-$call
  if [ ! -f "$report" ] || [ ! -f "$tmp/out${call#call}/gpu-check-logs.tar.gz" ]; then
    fail "$call left no report or logs in \$OUT"
    cat "$out"
    return
  fi
  mkdir -p "$logs" && tar -xzf "$tmp/out${call#call}/gpu-check-logs.tar.gz" -C "$logs"
  local name
  for name in "$@"; do
    grep -q "^| $name | " "$report" || fail "$call: no row for $name"
  done
  local first_report
  first_report=$(grep -n '^## GPU check:' "$out" | head -1 | cut -d: -f1)
  grep -n '^| [a-z]' "$out" | grep -v '^[0-9]*:| step |' | head -1 | awk -F: -v r="${first_report:-0}" '$1 < r { ok = 1 } END { exit !ok }' ||
    fail "$call printed no row before its final report"
  while IFS='|' read -r _ step result _; do
    step=$(echo "$step" | xargs)
    result=$(echo "$result" | xargs)
    case $result in
      ok|"INFO (not counted)") ;;
      SKIPPED)
        [[ ",$skipped," == *",${step#test-},"* ]] || fail "$call $step: skipped without --skip-tests" ;;
      FAILED)
        if [ -f "$logs/$step.log" ] && grep -q "$gpu_only" "$logs/$step.log"; then
          echo "  $call $step: failed on the double for want of a kernel body (a GPU runs it)"
        else
          fail "$call $step failed for a reason that is not the GPU's: $(grep "^| $step |" "$report")"
          [ -f "$logs/$step.log" ] && tail -20 "$logs/$step.log"
        fi ;;
      *) fail "$call $step: $result" ;;
    esac
  done < <(grep '^| [a-z]' "$report" | grep -v '^| step |')
}
tests=$(python3 tools/gpu/gpu_tests.py list "$build" gpu | awk '{ print "test-" $1 }')
# shellcheck disable=SC2086
judge call1 configure build $tests native-example
judge call2 sanitizer-memcheck sanitizer-racecheck sanitizer-memcheck-2ranks bench-ops bench-latency bench-call bench-native bench-alltoallv
sed -n '/^## GPU check/,$p' "$tmp/call1.out" "$tmp/call2.out"

# ---- what the build read, against what the GPU image has ----
if [ -f "$tmp/logs-call1/targets.txt" ]; then
  # shellcheck disable=SC2046
  python3 tests/gpu_check/check_deps.py "$build" "$tmp/deps" "$toolkit" $(cat "$tmp/logs-call1/targets.txt") ||
    fail "the GPU steps' build reads a file the GPU image lacks"
else
  fail "the first call recorded no build targets"
fi

# ---- a run cut by its budget still reports ----
OUT=$tmp/out1 tools/gpu/gpu-check --build "$build" --steps tests --budget 19 >"$tmp/cut.out" 2>&1 &&
  fail "a run with no time left passed"
grep -q '| SKIPPED | 0 | no time left' "$tmp/out1/gpu-results.md" && grep -q 'Result: FAILED' "$tmp/out1/gpu-results.md" ||
  fail "a run with no time left did not report its skipped steps"

say "done: $failures failure(s)"
[ $failures -eq 0 ]
