"""python3 -m mscclpp.dsl.presets --out DIR: write the default plans (the checked-in plans/)."""
import argparse
import os

from . import write_all


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m mscclpp.dsl.presets", description=__doc__)
    parser.add_argument("--out", required=True, help="directory to write the plans into")
    parser.add_argument("--clean", action="store_true", help="first remove *.json files that are not presets")
    args = parser.parse_args(argv)
    paths = write_all(args.out)
    if args.clean:
        keep = {os.path.basename(p) for p in paths}
        for name in os.listdir(args.out):
            if name.endswith(".json") and name not in keep:
                os.remove(os.path.join(args.out, name))
    print(f"wrote {len(paths)} plans to {args.out}")


if __name__ == "__main__":
    main()
