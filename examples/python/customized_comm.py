#!/usr/bin/env python3
"""A PyTorch-style wrapper that manages its own MSCCL++ communicator and runs a DSL plan.

The steps of MSCCL++'s DSL integration guide: jit-compile an NVLS AllReduce and register it,
install a selector preferring "nvls" plans, wrap a CommGroup in CustomizedComm, all_reduce.
Every rank checks the result against its own reference (small integers: exact in float16).
    torchrun --nnodes=1 --nproc_per_node=8 examples/python/customized_comm.py   # GPUs
    MSCCLPP_BACKEND=cpu python3 examples/python/customized_comm.py --nranks 4    # CPU backend
docs/python-api.md, "Examples", gives the environment each needs. Exit status: 0 correct on
every rank; 1 a wrong result or a failed rank; 2 bad usage; 3 the backend refused the call.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

import mscclpp
import mscclpp.comm as mscclpp_comm
from mscclpp import dtype_to_mscclpp_dtype
from mscclpp.buffers import buffer_info
from mscclpp.dsl import jit
from mscclpp.errors import NotSupportedError
from mscclpp.language import (AllReduce, BufferType, CollectiveProgram, MemoryChannel, Rank, SwitchChannel,
                              SyncType)

EXIT_WRONG, EXIT_USAGE, EXIT_UNSUPPORTED = 1, 2, 3


def allreduce_nvls(name, gpu_size, num_threads_per_block, min_message_size, max_message_size):
    """The integration guide's AllReduce: NVLS reduce, then broadcast, of one chunk per rank,
    between two all-to-all handshakes over memory channels. The CPU backend emulates switches."""
    chunksperloop = 1
    collective = AllReduce(gpu_size, chunksperloop, True)
    with CollectiveProgram(
        name,
        collective,
        gpu_size,
        instances=8,
        protocol="Simple",
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        nvls_chan = SwitchChannel(rank_list=list(range(gpu_size)), buffer_type=BufferType.input)
        channels = {(peer, gpu): MemoryChannel(peer, gpu) for gpu in range(gpu_size) for peer in range(gpu_size)
                    if peer != gpu}
        for gpu in range(gpu_size):  # every rank is ready
            for peer in range(gpu_size):
                if peer != gpu:
                    channels[(peer, gpu)].signal(tb=0, relaxed=True)
            for peer in range(gpu_size):
                if peer != gpu:
                    channels[(peer, gpu)].wait(tb=0, relaxed=True, data_sync=SyncType.after)
        for gpu in range(gpu_size):  # reduce, then broadcast, one chunk per rank
            input_buffer = Rank(gpu).get_input_buffer()
            nvls_chan.at_rank(gpu).reduce(buffer_offset=gpu, size=1, dst_chunk=input_buffer[gpu : gpu + 1], tb=0)
            nvls_chan.at_rank(gpu).broadcast(src_chunk=input_buffer[gpu : gpu + 1], buffer_offset=gpu, size=1, tb=0)
        for gpu in range(gpu_size):  # every rank is done
            for peer in range(gpu_size):
                if peer != gpu:
                    channels[(peer, gpu)].signal(tb=0, relaxed=True, data_sync=SyncType.before)
            for peer in range(gpu_size):
                if peer != gpu:
                    channels[(peer, gpu)].wait(tb=0, relaxed=True)
    return program


class CustomizedComm:
    """The integration guide's wrapper for PyTorch-style collectives. It takes torch tensors on
    the GPU, and numpy arrays or torch CPU tensors on the CPU backend."""

    def __init__(self, comm: mscclpp_comm.CommGroup):
        self.comm = comm
        self.rank = comm.my_rank
        self.world_size = comm.nranks
        self.local_rank = comm.my_rank % comm.nranks_per_node
        self.n_ranks_per_node = comm.nranks_per_node
        self.registry = mscclpp.ExecutionPlanRegistry()
        self.executor = mscclpp.Executor(comm.communicator)
        self.last_plan = None

    def all_reduce(self, tensor, op=None, stream=None):
        """In-place AllReduce of ``tensor`` with a registered MSCCL++ plan (sum only, as in the guide)."""
        if op is not None and not _is_sum(op):
            raise ValueError(f"CustomizedComm.all_reduce supports SUM only, got {op!r}")
        info = buffer_info(tensor)  # tensor.data_ptr(), numel() * element_size(), dtype
        plan = self.registry.select(
            collective="allreduce",
            world_size=self.world_size,
            n_ranks_per_node=self.n_ranks_per_node,
            send_buffer=info.pointer,
            recv_buffer=info.pointer,
            message_size=info.nbytes,
            dtype=info.dtype,
        )
        if plan is None:
            raise ValueError(f"No suitable plan found for collective allreduce with message size {info.nbytes}: "
                             f"{self.registry.last_reason}")
        self.last_plan = plan.name
        self.executor.execute(
            self.rank,
            info.pointer,
            info.pointer,
            info.nbytes,
            info.nbytes,
            dtype_to_mscclpp_dtype(info.dtype),
            plan.plan,
            stream.cuda_stream if stream is not None else 0,
        )


def _is_sum(op) -> bool:
    return op == mscclpp.ReduceOp.sum or str(op).split(".")[-1].upper() == "SUM"


def selector(plans: Dict[str, List[mscclpp.PlanHandle]], req: mscclpp.Request):
    """The guide's selector: a plan tagged "nvls" when there is one, else the first candidate."""
    collective_plans = plans.get(req.collective)
    nvls = [p for p in collective_plans if "nvls" in p.tags]
    return nvls[0] if nvls else collective_plans[0]


def pattern(xp, rank: int, count: int, device=None):
    """Rank r's input (xp is numpy or torch): integers in -4..4, exact sums in float16 for up to 8 ranks."""
    index = xp.arange(count, device=device) if device is not None else xp.arange(count)
    return ((index * 7 + rank * 3) % 9 - 4).astype(xp.float16) if xp.__name__ == "numpy" \
        else ((index * 7 + rank * 3) % 9 - 4).to(xp.float16)


def run_rank(args) -> int:
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr = os.environ.get("MSCCLPP_MASTER_ADDR", "127.0.0.1")
    port = os.environ.get("MSCCLPP_MASTER_PORT", "50000")
    if_ip_port_trio = f"{args.interface}:{addr}:{port}" if args.interface else f"{addr}:{port}"
    on_gpu = os.environ.get("MSCCLPP_BACKEND", "auto").lower() != "cpu"
    torch = _import_torch(required=on_gpu or args.torch)
    if on_gpu and not torch.cuda.is_available():
        print(f"rank {rank}: no CUDA device is visible; run with MSCCLPP_BACKEND=cpu for host buffers", file=sys.stderr)
        return EXIT_USAGE
    if on_gpu:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))

    # Step 1. Compile and register a DSL plan; the jit cache compiles it once.
    plan = jit.compile(
        algo=allreduce_nvls,
        name="allreduce_nvls",
        collective="allreduce",
        nranks_per_node=world_size,
        world_size=world_size,
        instances=2,
        protocol="Simple",
        num_threads_per_block=1024,
        min_msg_size=1 << 20,
        max_msg_size=48 << 30,
        tags={"nvls"},
    )
    mscclpp.plan.register(plan)
    # Step 2. The selector.
    mscclpp.plan.set_selector(selector)
    # Step 3. Communicator and wrapper.
    mscclpp_group = mscclpp_comm.CommGroup(interfaceIpPortTrio=if_ip_port_trio, rank=rank, size=world_size)
    comm = CustomizedComm(mscclpp_group)

    # Step 4. AllReduce, checked against the reference on every rank.
    xp = torch if torch is not None else _import_numpy()
    device = "cuda" if on_gpu else ("cpu" if torch is not None else None)
    count = args.elements
    expected = pattern(xp, 0, count, device)
    for r in range(1, world_size):
        expected = expected + pattern(xp, r, count, device)
    for iteration in range(args.iterations):
        x = pattern(xp, rank, count, device)
        try:
            comm.all_reduce(x, op=torch.distributed.ReduceOp.SUM if torch is not None else None)
        except NotSupportedError as error:
            print(f"rank {rank}: the backend refused the call: {error}", file=sys.stderr)
            return EXIT_UNSUPPORTED
        if on_gpu:
            torch.cuda.synchronize()
        wrong = (x != expected).nonzero()
        wrong = wrong[0] if xp.__name__ == "numpy" else wrong.flatten()
        if len(wrong) > 0:
            i = int(wrong[0])
            print(f"rank {rank} iteration {iteration}: {len(wrong)} wrong element(s); element {i} is {float(x[i])}, "
                  f"expected {float(expected[i])} (plan {comm.last_plan})", file=sys.stderr)
            return EXIT_WRONG
    comm.executor.close()
    mscclpp_group.close()
    print(f"rank {rank}/{world_size}: allreduce of {count} float16 elements ({count * 2} bytes) with plan "
          f"'{comm.last_plan}' on the {comm.executor.backend} backend: correct ({args.iterations} iterations)")
    return 0


def _import_torch(required: bool):
    try:
        import torch  # noqa: PLC0415 - optional on the CPU backend
        import torch.distributed  # noqa: F401, PLC0415
    except ImportError:
        if required:
            raise SystemExit("torch is needed for GPU tensors and --torch (pip install torch)") from None
        return None
    return torch


def _import_numpy():
    try:
        import numpy  # noqa: PLC0415 - host arrays without torch
    except ImportError:
        raise SystemExit("numpy (or torch with --torch) is needed for host buffers: pip install numpy") from None
    return numpy


def launch(args) -> int:
    """Runs args.nranks copies of this script as ranks on this host (what torchrun would do)."""
    with socket.socket() as s:  # a free port for rank 0's bootstrap root
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MSCCLPP_MASTER_ADDR="127.0.0.1", MSCCLPP_MASTER_PORT=str(port),
               WORLD_SIZE=str(args.nranks), LOCAL_WORLD_SIZE=str(args.nranks))
    env.setdefault("MSCCLPP_BACKEND", "cpu")
    argv = [sys.executable, os.path.abspath(__file__), "--elements", str(args.elements),
            "--iterations", str(args.iterations)] + (["--torch"] if args.torch else [])
    # Each rank's stdout goes to its own file, replayed in rank order:
    # ranks printing at once would interleave their lines.
    outputs = [tempfile.TemporaryFile() for _ in range(args.nranks)]
    ranks = [subprocess.Popen(argv, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), stdout=outputs[r])
             for r in range(args.nranks)]
    deadline = time.monotonic() + args.timeout
    failed = None
    while any(p.poll() is None for p in ranks):
        if time.monotonic() > deadline:
            print(f"launcher: ranks still running after {args.timeout} s; stopping them", file=sys.stderr)
            failed = EXIT_WRONG
            break
        try:
            ranks[[p.poll() is None for p in ranks].index(True)].wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        failed = next((p.returncode for p in ranks if p.returncode not in (None, 0)), failed)
        if failed is not None:
            break
    if failed is not None:  # the others cannot finish: do not wait for their deadlines
        grace = time.monotonic() + 5
        for p in ranks:
            try:
                p.wait(timeout=max(0.0, grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    for output in outputs:
        output.seek(0)
        sys.stdout.write(output.read().decode("utf-8", "replace"))
        output.close()
    sys.stdout.flush()
    codes = [p.returncode for p in ranks]
    if all(code == 0 for code in codes):
        return 0
    print(f"launcher: rank exit codes {codes}", file=sys.stderr)
    return next((c for c in codes if c not in (0, None) and c > 0), EXIT_WRONG)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nranks", type=int, default=0,
                        help="start this many ranks as local processes (CPU backend unless MSCCLPP_BACKEND says "
                             "otherwise); without it the script is one rank (RANK, WORLD_SIZE from torchrun)")
    parser.add_argument("--elements", type=int, default=None,
                        help="float16 elements per rank (default: 12M as in the guide on GPUs, 512K on the CPU)")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--torch", action="store_true", help="use torch CPU tensors instead of numpy arrays on the CPU")
    parser.add_argument("--interface", default="", help="network interface for the master address (interface:ip:port)")
    parser.add_argument("--timeout", type=float, default=float(os.environ.get("MSCCLPP_TIMEOUT_S", 120)) + 30,
                        help="launcher: seconds before the ranks are stopped")
    args = parser.parse_args()
    if args.elements is None:
        args.elements = (512 << 10) if (args.nranks or os.environ.get("MSCCLPP_BACKEND", "").lower() == "cpu") \
            else (12 << 20)
    if args.nranks:
        if args.nranks < 1:
            parser.error("--nranks must be positive")
        return launch(args)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        parser.error("run under torchrun (which sets RANK and WORLD_SIZE) or give --nranks N")
    return run_rank(args)


if __name__ == "__main__":
    sys.exit(main())
