#!/bin/bash
# Runs a command as H*K ranks on H emulated hosts: network namespaces
# joined by a bridge. Host A runs ranks 0..K-1 and the rendezvous root,
# host B ranks K..2K-1, and so on. Each host has its own MSCCLPP_HOSTID,
# so the runtime sees H hosts, and MSCCLPP_SOCKET_IFNAME names its link.
#   runtime_netns_run.sh [--hosts H] [--ranks-per-host K] [--timeout S]
#     [--launcher PATH] [--env K=V]... [--host-env I K=V]... [--allow-fail R]...
#     [--loopback] [--cut-link-after S] -- command [args...]
# The option loop explains each option. Everything created is removed on
# exit. Exit status: the launchers', 0 when all ranks passed; 77 ("skipped")
# when namespaces cannot be created here.
set -u
H=2
K=2
TIMEOUT=120
LAUNCHER="$(dirname "$0")/runtime_launch"
ENVS=()
declare -A HOST_ENVS=()
ALLOW_FAIL=()
LOOPBACK=0
CUT_AFTER=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) H="$2"; shift 2 ;;
    --ranks-per-host) K="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --launcher) LAUNCHER="$2"; shift 2 ;;
    --env) ENVS+=(--env "$2"); shift 2 ;;
    # K=V for host I (0 is host A) only, as for an HCA only some hosts have.
    --host-env) HOST_ENVS[$2]="${HOST_ENVS[$2]:-} --env $3"; shift 3 ;;
    # Rank R may die, as a fault victim; passed to its host's launcher.
    --allow-fail) ALLOW_FAIL+=(--allow-fail "$2"); shift 2 ;;
    # No namespaces: every host on 127.0.0.1, told apart by MSCCLPP_HOSTID
    # alone. The same code paths run across hosts; never skipped.
    --loopback) LOOPBACK=1; shift ;;
    # S seconds after every rank created $MSCCLPP_TEST_CUT_FILE.ready.RANK,
    # the last host's link goes down without closing its connections. The
    # cut's wall-clock time then goes to $MSCCLPP_TEST_CUT_FILE. Needs namespaces.
    --cut-link-after) CUT_AFTER="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "runtime_netns_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "runtime_netns_run.sh: no command after --" >&2; exit 2; }
[ -x "$LAUNCHER" ] || { echo "runtime_netns_run.sh: launcher $LAUNCHER not found (use --launcher)" >&2; exit 2; }
case "$H" in 2|3|4|5|6|7|8) ;; *) echo "runtime_netns_run.sh: --hosts takes 2 to 8, not $H" >&2; exit 2 ;; esac
for h in "${!HOST_ENVS[@]}"; do
  [ "$h" -ge 0 ] 2>/dev/null && [ "$h" -lt "$H" ] || { echo "runtime_netns_run.sh: --host-env $h: no such host" >&2; exit 2; }
done

ID=$(( $$ % 100000 ))
NS="mscclpp-$ID"
SUBNET="10.$(( (ID / 250) % 250 + 1 )).$(( ID % 250 + 1 ))"
PORT=$(( 20000 + ID % 20000 ))
LETTERS=(a b c d e f g h)
N=$(( H * K ))

# Starts host h's launcher in the background with the environment given; its pid goes to PIDS[h].
PIDS=()
start_host() {  # h, runner prefix..., then -- env assignments
  local h=$1; shift
  local prefix=()
  while [ "$1" != "--" ]; do prefix+=("$1"); shift; done
  shift
  # shellcheck disable=SC2086  # HOST_ENVS holds "--env K=V" words
  "${prefix[@]}" env "$@" "$LAUNCHER" "${COMMON[@]}" ${HOST_ENVS[$h]:-} --first-rank $(( h * K )) -- "${CMD[@]}" &
  PIDS[$h]=$!
}

wait_hosts() {  # label
  local ok=0 codes=""
  for h in $(seq 0 $(( H - 1 ))); do
    wait "${PIDS[$h]}"; local rc=$?
    codes+="${codes:+, }host ${LETTERS[$h]^^}${ADDRS:+ (${ADDRS[$h]})} exit $rc"
    [ $rc -eq 0 ] || ok=1
  done
  echo "runtime_netns_run.sh$1: $codes"
  return $ok
}

CMD=("$@")
if [ "$LOOPBACK" = 1 ]; then
  # The hosts share this machine's lo with every other process. Pick a port
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
  ADDRS=()
  for h in $(seq 0 $(( H - 1 ))); do
    start_host "$h" -- MSCCLPP_HOSTID="loopback-host-${LETTERS[$h]}" MSCCLPP_SOCKET_IFNAME=lo
  done
  wait_hosts " --loopback"
  exit
fi

CUT_FILE="${TMPDIR:-/tmp}/mscclpp-cut-$ID"
rm -f "$CUT_FILE"
cleanup() {
  for h in $(seq 0 $(( H - 1 ))); do ip netns del "$NS-${LETTERS[$h]}" 2>/dev/null; done
  ip netns del "$NS-sw" 2>/dev/null
  rm -f "$CUT_FILE" "$CUT_FILE".ready.* "$CUT_FILE".failed.*
}
trap cleanup EXIT

skip() {
  echo "SKIP: cannot create network namespaces here ($1); the multi-host test needs root or CAP_NET_ADMIN and iproute2"
  exit 77
}
command -v ip >/dev/null 2>&1 || skip "the ip command (iproute2) is missing"
# The switch: a bridge in a namespace of its own; each host a namespace with
# one end of a veth pair, the other end on the bridge.
err=$(ip netns add "$NS-sw" 2>&1) || skip "ip netns add: $err"
ip -n "$NS-sw" link add br0 type bridge && ip -n "$NS-sw" link set br0 up || skip "a bridge"
ADDRS=()
LINKS=()
for h in $(seq 0 $(( H - 1 ))); do
  l=${LETTERS[$h]}
  ns="$NS-$l"
  LINKS[$h]="msv${ID}${l}"
  ADDRS[$h]="$SUBNET.$(( h + 1 ))"
  ip netns add "$ns" || skip "ip netns add (host ${l^^})"
  ip link add "${LINKS[$h]}" type veth peer name "msv${ID}s$l" || skip "ip link add veth"
  ip link set "${LINKS[$h]}" netns "$ns" && ip link set "msv${ID}s$l" netns "$NS-sw" || skip "moving the veth ends"
  ip -n "$NS-sw" link set "msv${ID}s$l" master br0 && ip -n "$NS-sw" link set "msv${ID}s$l" up || skip "bridging"
  ip -n "$ns" addr add "${ADDRS[$h]}/24" dev "${LINKS[$h]}" || skip "ip addr add"
  ip -n "$ns" link set lo up && ip -n "$ns" link set "${LINKS[$h]}" up || skip "ip link set up"
done

COMMON=(--nranks "$N" --local-ranks "$K" --comm-id "${ADDRS[0]}:$PORT" --timeout "$TIMEOUT" "${ENVS[@]}" "${ALLOW_FAIL[@]}")
LAST=$(( H - 1 ))
if [ -n "$CUT_AFTER" ]; then
  COMMON+=(--env "MSCCLPP_TEST_CUT_FILE=$CUT_FILE")
  # The last host vanishes: its link goes down, nothing is closed (no FIN, no RST reach the others).
  ( while [ "$(ls "$CUT_FILE".ready.* 2>/dev/null | wc -l)" -lt "$N" ]; do sleep 0.1; done
    sleep "$CUT_AFTER"; asked=$(date +%s.%N); ip -n "$NS-${LETTERS[$LAST]}" link set "${LINKS[$LAST]}" down
    date +%s.%N > "$CUT_FILE.tmp" && mv "$CUT_FILE.tmp" "$CUT_FILE"
    echo "runtime_netns_run.sh: host ${LETTERS[$LAST]^^}'s link is down ($(awk -v a="$asked" -v b="$(cat "$CUT_FILE")" \
      'BEGIN { printf "%.2f", b - a }') s after it was asked)" ) &
fi
for h in $(seq 0 $LAST); do
  start_host "$h" ip netns exec "$NS-${LETTERS[$h]}" -- MSCCLPP_HOSTID="netns-host-${LETTERS[$h]}" \
    MSCCLPP_SOCKET_IFNAME="${LINKS[$h]}"
done
wait_hosts ""
