#!/bin/sh
# Runs an example program (examples/) as the rank runtime_launch started:
# its --nranks, --rank and --root from WORLD_SIZE, RANK and MSCCLPP_COMM_ID.
#   as_rank.sh PROGRAM [args...]
program=$1
shift
exec "$program" --device cpu --nranks "$WORLD_SIZE" --rank "$RANK" --root "$MSCCLPP_COMM_ID" "$@"
