"""A program in MSCCL++'s script style: argparse, then print(JSON())."""
import argparse

from mscclpp.language import AllGather, CollectiveProgram, JSON, MemoryChannel, Rank, SyncType

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="script_style")
parser.add_argument("--num_gpus", type=int, default=2)
args = parser.parse_args()

print("building", args.name)
with CollectiveProgram(args.name, AllGather(args.num_gpus, 1, True), args.num_gpus):
    for r in range(args.num_gpus):
        for p in range(args.num_gpus):
            if p != r:
                channel = MemoryChannel(p, r)
                channel.put(Rank(p).get_output_buffer()[r : r + 1], Rank(r).get_output_buffer()[r : r + 1], tb=0)
                channel.signal(tb=0, data_sync=SyncType.before)
                channel.wait(tb=0, data_sync=SyncType.after)
    print(JSON())
