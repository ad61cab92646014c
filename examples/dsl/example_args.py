"""The command line every example shares: MSCCL++'s example arguments, then print the plan.

``python3 FILE.py --num_gpus 8`` prints the plan FILE's ``build`` makes, as MSCCL++'s examples do.
"""
import argparse


def run(build, defaults=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", type=str, default=None, help="plan name")
    parser.add_argument("--num_gpus", type=int, default=None, help="number of ranks")
    parser.add_argument("--num_threads_per_block", type=int, default=None)
    parser.add_argument("--min_message_size", type=int, default=None)
    parser.add_argument("--max_message_size", type=int, default=None)
    parser.add_argument("--instances", type=int, default=None)
    args = parser.parse_args()
    kwargs = {k: v for k, v in vars(args).items() if v is not None}
    if defaults:
        kwargs = {**defaults, **kwargs}
    print(build(**kwargs).to_json(indent=None))
