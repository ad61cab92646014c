#!/bin/bash
# Runs a command as 2*K ranks on two emulated hosts: network namespaces
# joined by a veth pair. Host A runs ranks 0..K-1 and the rendezvous root,
# host B ranks K..2K-1. Each host has its own MSCCLPP_HOSTID, so the runtime
# sees two hosts, and MSCCLPP_SOCKET_IFNAME names its veth end.
#   runtime_netns_run.sh [--ranks-per-host K] [--timeout S] [--launcher PATH]
#     [--env K=V]... [--allow-fail R]... [--loopback] [--cut-link-after S]
#     -- command [args...]
# The option loop explains each option. Everything created is removed on
# exit. Exit status: the launchers', 0 when all ranks passed; 77 ("skipped")
# when namespaces cannot be created here.
set -u
K=2
TIMEOUT=120
LAUNCHER="$(dirname "$0")/runtime_launch"
ENVS=()
ALLOW_FAIL=()
LOOPBACK=0
CUT_AFTER=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks-per-host) K="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --launcher) LAUNCHER="$2"; shift 2 ;;
    --env) ENVS+=(--env "$2"); shift 2 ;;
    # Rank R may die, as a fault victim; passed to its host's launcher.
    --allow-fail) ALLOW_FAIL+=(--allow-fail "$2"); shift 2 ;;
    # No namespaces: both hosts on 127.0.0.1, told apart by MSCCLPP_HOSTID
    # alone. The same code paths run across hosts; never skipped.
    --loopback) LOOPBACK=1; shift ;;
    # S seconds after every rank created $MSCCLPP_TEST_CUT_FILE.ready.RANK,
    # host B's link goes down without closing its TCP connections. The cut's
    # wall-clock time then goes to $MSCCLPP_TEST_CUT_FILE. Needs namespaces.
    --cut-link-after) CUT_AFTER="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "runtime_netns_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "runtime_netns_run.sh: no command after --" >&2; exit 2; }
[ -x "$LAUNCHER" ] || { echo "runtime_netns_run.sh: launcher $LAUNCHER not found (use --launcher)" >&2; exit 2; }

ID=$(( $$ % 100000 ))
NS="mscclpp-$ID"
VA="msv${ID}a"
VB="msv${ID}b"
SUBNET="10.$(( (ID / 250) % 250 + 1 )).$(( ID % 250 + 1 ))"
ADDR_A="$SUBNET.1"
ADDR_B="$SUBNET.2"
PORT=$(( 20000 + ID % 20000 ))

N=$(( 2 * K ))
if [ "$LOOPBACK" = 1 ]; then
  # Both hosts share this machine's lo with every other process. Pick a port
  # below the kernel's ephemeral range, where outgoing connections take their
  # ports, that nothing holds at this moment.
  PORT=$(python3 - "$ID" <<'PICK'
import socket, sys
seed = int(sys.argv[1])
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
span = max(low - 20000, 1000)
for k in range(500):
    port = 20000 + (seed + 7919 * k) % span
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
else:
    sys.exit("runtime_netns_run.sh: no free port on 127.0.0.1 below the ephemeral range")
PICK
  ) || exit 2
  COMMON=(--nranks "$N" --local-ranks "$K" --comm-id "127.0.0.1:$PORT" --timeout "$TIMEOUT" "${ENVS[@]}" "${ALLOW_FAIL[@]}")
  env MSCCLPP_HOSTID=loopback-host-a MSCCLPP_SOCKET_IFNAME=lo "$LAUNCHER" "${COMMON[@]}" --first-rank 0 -- "$@" &
  PID_A=$!
  env MSCCLPP_HOSTID=loopback-host-b MSCCLPP_SOCKET_IFNAME=lo "$LAUNCHER" "${COMMON[@]}" --first-rank "$K" -- "$@" &
  PID_B=$!
  wait $PID_A; RC_A=$?
  wait $PID_B; RC_B=$?
  echo "runtime_netns_run.sh --loopback: host A exit $RC_A, host B exit $RC_B"
  [ $RC_A -eq 0 ] && [ $RC_B -eq 0 ]
  exit
fi

CUT_FILE="${TMPDIR:-/tmp}/mscclpp-cut-$ID"
rm -f "$CUT_FILE"
cleanup() {
  ip netns del "$NS-a" 2>/dev/null
  ip netns del "$NS-b" 2>/dev/null
  ip link del "$VA" 2>/dev/null
  rm -f "$CUT_FILE" "$CUT_FILE".ready.*
}
trap cleanup EXIT

skip() {
  echo "SKIP: cannot create network namespaces here ($1); the two-host test needs root or CAP_NET_ADMIN and iproute2"
  exit 77
}
command -v ip >/dev/null 2>&1 || skip "the ip command (iproute2) is missing"
err=$(ip netns add "$NS-a" 2>&1) || skip "ip netns add: $err"
ip netns add "$NS-b" || skip "ip netns add (second)"
ip link add "$VA" type veth peer name "$VB" || skip "ip link add veth"
ip link set "$VA" netns "$NS-a" && ip link set "$VB" netns "$NS-b" || skip "moving the veth ends"
ip -n "$NS-a" addr add "$ADDR_A/24" dev "$VA" && ip -n "$NS-b" addr add "$ADDR_B/24" dev "$VB" || skip "ip addr add"
for ns in a b; do ip -n "$NS-$ns" link set lo up; done
ip -n "$NS-a" link set "$VA" up && ip -n "$NS-b" link set "$VB" up || skip "ip link set up"

COMMON=(--nranks "$N" --local-ranks "$K" --comm-id "$ADDR_A:$PORT" --timeout "$TIMEOUT" "${ENVS[@]}" "${ALLOW_FAIL[@]}")
if [ -n "$CUT_AFTER" ]; then
  COMMON+=(--env "MSCCLPP_TEST_CUT_FILE=$CUT_FILE")
  # Host B vanishes: its link goes down, nothing is closed (no FIN, no RST reach host A).
  ( while [ "$(ls "$CUT_FILE".ready.* 2>/dev/null | wc -l)" -lt "$N" ]; do sleep 0.1; done
    sleep "$CUT_AFTER"; asked=$(date +%s.%N); ip -n "$NS-b" link set "$VB" down
    date +%s.%N > "$CUT_FILE.tmp" && mv "$CUT_FILE.tmp" "$CUT_FILE"
    echo "runtime_netns_run.sh: host B's link is down ($(awk -v a="$asked" -v b="$(cat "$CUT_FILE")" \
      'BEGIN { printf "%.2f", b - a }') s after it was asked)" ) &
fi
ip netns exec "$NS-a" env MSCCLPP_HOSTID=netns-host-a MSCCLPP_SOCKET_IFNAME="$VA" \
  "$LAUNCHER" "${COMMON[@]}" --first-rank 0 -- "$@" &
PID_A=$!
ip netns exec "$NS-b" env MSCCLPP_HOSTID=netns-host-b MSCCLPP_SOCKET_IFNAME="$VB" \
  "$LAUNCHER" "${COMMON[@]}" --first-rank "$K" -- "$@" &
PID_B=$!
wait $PID_A; RC_A=$?
wait $PID_B; RC_B=$?
echo "runtime_netns_run.sh: host A ($ADDR_A) exit $RC_A, host B ($ADDR_B) exit $RC_B"
[ $RC_A -eq 0 ] && [ $RC_B -eq 0 ]
