"""The runtime calls no cudaMemset and no cudaMemcpy without Async. Both run on the legacy default
stream (CUDA Runtime API, "API synchronization behavior"): a memset, and a copy from pageable memory to
the device, may land after the call returns, and nothing the runtime enqueues on its non-blocking
streams waits for them; a copy to the host waits for the blocking streams' kernels. Each is an async
call on a non-blocking stream the code owns, then that stream's synchronisation (docs/cuda-backend.md).
The GPU multi-process workers feed the kernels the same way."""
import os
import re

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCES = (".cc", ".cu", ".hpp", ".cuh", ".h", ".in")
WORKERS = ("tests/gpu/backend/gpu_mp_worker.cc", "tests/gpu_double/gpu_double_mp_worker.cc")
SYNC_CALL = re.compile(r"\bcuda(?:Memset|Memcpy)\s*\(")
LINE_COMMENT = re.compile(r"//.*")


def sync_calls(path):
    """(line, text) of every synchronous cudaMemset or cudaMemcpy call in a source, comments left out."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return [(number, line.strip()) for number, line in enumerate(lines, 1)
            if SYNC_CALL.search(LINE_COMMENT.sub("", line))]


def runtime_sources():
    found = []
    for folder, dirs, files in os.walk(os.path.join(REPO_ROOT, "runtime")):
        dirs.sort()
        found += [os.path.join(folder, name) for name in sorted(files) if name.endswith(SOURCES)]
    return found + [os.path.join(REPO_ROOT, w) for w in WORKERS]


def test_no_cudamemset_or_cudamemcpy_without_async():
    hits = [f"{os.path.relpath(path, REPO_ROOT)}:{number}: {text}" for path in runtime_sources()
            for number, text in sync_calls(path)]
    assert not hits, "synchronous cudaMemset/cudaMemcpy (use the Async call on a stream of ours):\n" + "\n".join(hits)


def test_the_scan_sees_a_call_and_skips_comments(tmp_path):
    source = tmp_path / "example.cc"
    source.write_text("// cudaMemcpy(a, b, n) in a comment\n  e = cudaMemset (p, 0, n);\ncudaMemsetAsync(p, 0, n, s);\n")
    assert sync_calls(str(source)) == [(2, "e = cudaMemset (p, 0, n);")]
    assert len(runtime_sources()) > 100
