#!/bin/sh
# Runs a command pinned to CPU (LOCAL_RANK mod N), as a job pins each rank
# near its devices; runtime_launch sets LOCAL_RANK.
#   pin_rank.sh N command [args...]
n=$1
shift
exec taskset -c $((LOCAL_RANK % n)) "$@"
