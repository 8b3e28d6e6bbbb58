#!/usr/bin/env bash
# An emulated cluster on one machine: one Linux network namespace per rank, each
# joined by a veth pair to a bridge in a hub namespace, every rank's link shaped to a
# rate in both directions with `tc tbf` (a switched cluster with one NIC of that rate
# per rank). Ranks talk MPI over TCP through the bridge, so what they send crosses a
# real (if virtual) wire that the kernel counts and limits. docs/multinode.md,
# "An emulated cluster", explains how to use it.
#
#   emulated_cluster.sh run RANKS RATE [--name NAME] [--mpi "ARGS"] -- COMMAND...
#       up, then mpirun COMMAND across it, then down (also on error and Ctrl-C);
#       exits with mpirun's status.
#   emulated_cluster.sh up NAME RANKS RATE      make it (RATE: 1gbit, 100mbit, 3.5mbit,
#                                               800kbit, or none for no limit)
#   emulated_cluster.sh mpirun NAME [--mpi "ARGS"] -- COMMAND...
#                                               run COMMAND on an existing cluster
#   emulated_cluster.sh rate NAME RANK RATE     change one rank's link rate (both ways)
#   emulated_cluster.sh link NAME RANK up|down  take one rank's link down or up
#   emulated_cluster.sh bytes NAME              bytes each rank's link carried, as the
#                                               kernel's qdiscs counted them:
#                                               "rank R sent S received V"
#   emulated_cluster.sh down NAME               remove it (kills what runs inside)
#   emulated_cluster.sh check                   exit 0 if this machine can make one,
#                                               else print why (one line) and exit 2
#
# NAME prefixes every namespace (NAME-hub, NAME-r0, ...), so several clusters (ctest
# runs tests in parallel) can exist at once; their networks never meet. Addresses come
# from 198.18.0.0/24 (RFC 2544's benchmarking range) inside namespaces this script
# creates; nothing is sent anywhere else. Needs root, `ip netns` and `tc` with tbf.
set -euo pipefail

readonly SUBNET_PREFIX="198.18.0"
readonly SUBNET="${SUBNET_PREFIX}.0/24"
readonly HUB_ADDRESS="${SUBNET_PREFIX}.254"
# The largest frame a default veth hands a qdisc: a 64 KiB GSO frame plus the headers
# of its ~45 segments, which tbf counts (68130 bytes measured; rounded up to 128 KiB).
readonly LARGEST_GSO_FRAME=131072
SCRIPT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

die() {
  echo "error: emulated_cluster: $*" >&2
  exit 2
}

# Why this machine cannot make a cluster, or nothing.
why_not() {
  if [ "$(id -u)" -ne 0 ]; then echo "needs root (network namespaces and tc)"; return; fi
  command -v ip >/dev/null 2>&1 || { echo "'ip' (iproute2) not found"; return; }
  command -v tc >/dev/null 2>&1 || { echo "'tc' (iproute2) not found"; return; }
  local probe="ecprobe$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "cannot create a network namespace ('ip netns add' failed)"
    return
  fi
  local reason=""
  if ! ip -n "$probe" link add a0 type veth peer name b0 2>/dev/null; then
    reason="cannot create a veth pair inside a namespace"
  elif ! ip -n "$probe" link add br0 type bridge 2>/dev/null; then
    reason="cannot create a bridge inside a namespace"
  elif ! tc -n "$probe" qdisc add dev a0 root tbf rate 10mbit burst 16kb latency 50ms 2>/dev/null; then
    reason="tc cannot attach a tbf qdisc (sch_tbf missing?)"
  fi
  ip netns del "$probe" 2>/dev/null || true
  echo "$reason"
}

require_possible() {
  local why
  why="$(why_not)"
  [ -z "$why" ] || die "$why"
}

hub() { echo "$1-hub"; }
rank_ns() { echo "$1-r$2"; }

check_name() {
  [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9_.]{0,30}$ ]] ||
    die "cluster name '$1' must be 1-31 letters, digits, '_' or '.'"
}

ranks_of() {
  local name="$1" n=0
  while ip netns list | awk '{print $1}' | grep -qx "$(rank_ns "$name" "$n")"; do n=$((n + 1)); done
  echo "$n"
}

# RATE in bits per second, or 0 for "none".
rate_bits() {
  local rate="$1"
  if [ "$rate" = "none" ]; then echo 0; return; fi
  [[ "$rate" =~ ^([0-9]+(\.[0-9]+)?)(kbit|mbit|gbit)$ ]] ||
    die "rate '$rate' must look like 1gbit, 100mbit, 3.5mbit, 800kbit or be 'none'"
  awk -v v="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" 'BEGIN {
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : 1e9; printf "%.0f\n", v * m }'
}

# Shapes egress of DEV in namespace NS to RATE (or counts only, for none). The bucket
# holds 2 ms at the rate (at least 16 KB, so a 1500-byte frame always fits) and the
# queue 50 ms, about a switch port's buffer; tbf splits GSO frames larger than the
# bucket, so the veth's offloads need no change. A tbf that stays a tbf is changed in
# place, which keeps what it has queued, as a link that slows down does (replacing it
# would drop the queue, and TCP's backoff after such a loss can stall a connection for
# a minute); it is replaced where the kind changes (pfifo for none, tbf otherwise).
shape() {
  local ns="$1" dev="$2" rate="$3"
  local bits
  bits="$(rate_bits "$rate")"
  if [ "$bits" = 0 ]; then
    tc -n "$ns" qdisc replace dev "$dev" root pfifo limit 10000
    return
  fi
  local burst=$((bits / 8 / 500))
  [ "$burst" -ge 16384 ] || burst=16384
  local verb=replace old_burst
  old_burst="$(tc -j -n "$ns" qdisc show dev "$dev" root | sed -nE 's/.*"kind":"tbf".*"burst":([0-9]+).*/\1/p')"
  if [ -n "$old_burst" ]; then
    verb=change
    # The old bucket let in unsplit GSO frames up to its size (up to 64 KiB of data,
    # ~68 KB with the per-segment headers tbf counts). A frame larger than the bucket
    # can never leave it, so a shrinking bucket stays large enough for those already
    # queued; otherwise the link would stall for good behind the first one.
    local queued_frame=$((old_burst < LARGEST_GSO_FRAME ? old_burst : LARGEST_GSO_FRAME))
    [ "$burst" -ge "$queued_frame" ] || burst="$queued_frame"
  fi
  tc -n "$ns" qdisc "$verb" dev "$dev" root tbf rate "$bits"bit burst "$burst" latency 50ms
}

cmd_up() {
  [ $# -eq 3 ] || die "usage: up NAME RANKS RATE"
  local name="$1" ranks="$2" rate="$3"
  check_name "$name"
  [[ "$ranks" =~ ^[0-9]+$ ]] && [ "$ranks" -ge 1 ] && [ "$ranks" -le 250 ] ||
    die "RANKS must be 1-250, got '$ranks'"
  rate_bits "$rate" >/dev/null
  require_possible
  if ip netns list | awk '{print $1}' | grep -qx "$(hub "$name")"; then
    die "a cluster named '$name' exists ('$0 down $name' removes it)"
  fi
  local h
  h="$(hub "$name")"
  ip netns add "$h"
  ip -n "$h" link set lo up
  ip -n "$h" link add br0 type bridge
  ip -n "$h" addr add "$HUB_ADDRESS/24" dev br0
  ip -n "$h" link set br0 up
  local r ns
  for ((r = 0; r < ranks; r++)); do
    ns="$(rank_ns "$name" "$r")"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Made inside the hub and the rank's namespace directly: no name ever exists in
    # the machine's own namespace, where parallel clusters would collide.
    ip -n "$h" link add "p$r" type veth peer name eth0 netns "$ns"
    ip -n "$h" link set "p$r" master br0
    ip -n "$h" link set "p$r" up
    ip -n "$ns" addr add "$SUBNET_PREFIX.$((r + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    # Rank r's NIC: what it sends (its eth0) and what it receives (the hub's port).
    shape "$ns" eth0 "$rate"
    shape "$h" "p$r" "$rate"
  done
  echo "emulated_cluster: '$name' is up: $ranks rank(s) at $rate each way, hub $HUB_ADDRESS, rank r at $SUBNET_PREFIX.(r+1)"
}

cmd_down() {
  [ $# -eq 1 ] || die "usage: down NAME"
  local name="$1" ns pids
  check_name "$name"
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${name//./\\.}-(hub|r[0-9]+)$" || true); do
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}

cmd_rate() {
  [ $# -eq 3 ] || die "usage: rate NAME RANK RATE"
  local name="$1" r="$2" rate="$3"
  ip netns list | awk '{print $1}' | grep -qx "$(rank_ns "$name" "$r")" || die "no rank $r in cluster '$name'"
  shape "$(rank_ns "$name" "$r")" eth0 "$rate"
  shape "$(hub "$name")" "p$r" "$rate"
}

cmd_link() {
  [ $# -eq 3 ] || die "usage: link NAME RANK up|down"
  local name="$1" r="$2" state="$3"
  [ "$state" = up ] || [ "$state" = down ] || die "link state must be up or down, got '$state'"
  ip netns list | awk '{print $1}' | grep -qx "$(rank_ns "$name" "$r")" || die "no rank $r in cluster '$name'"
  # The hub's port: the rank keeps its address and sockets, as a pulled cable does.
  ip -n "$(hub "$name")" link set "p$r" "$state"
}

# Bytes the root qdisc of DEV in NS has sent (frames with their Ethernet headers).
qdisc_bytes() {
  tc -s -n "$1" qdisc show dev "$2" | awk '/^ *Sent / {print $2; exit}'
}

cmd_bytes() {
  [ $# -eq 1 ] || die "usage: bytes NAME"
  local name="$1" ranks r
  ranks="$(ranks_of "$name")"
  [ "$ranks" -gt 0 ] || die "no cluster named '$name'"
  for ((r = 0; r < ranks; r++)); do
    echo "rank $r sent $(qdisc_bytes "$(rank_ns "$name" "$r")" eth0) received $(qdisc_bytes "$(hub "$name")" "p$r")"
  done
}

# Run inside a rank's namespace (mpirun starts this in the hub for every rank).
cmd_enter() {
  local name="$1"
  shift
  [ "${1:-}" = "--" ] && shift
  local r="${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-}}"
  [ -n "$r" ] || die "enter: no OMPI_COMM_WORLD_RANK (run through '$0 mpirun')"
  exec ip netns exec "$(rank_ns "$name" "$r")" "$@"
}

cmd_mpirun() {
  local name="$1"
  shift
  local extra=""
  if [ "${1:-}" = "--mpi" ]; then extra="$2"; shift 2; fi
  [ "${1:-}" = "--" ] || die "usage: mpirun NAME [--mpi \"ARGS\"] -- COMMAND..."
  shift
  [ $# -gt 0 ] || die "mpirun: no command"
  local ranks
  ranks="$(ranks_of "$name")"
  [ "$ranks" -gt 0 ] || die "no cluster named '$name'"
  command -v mpirun >/dev/null 2>&1 || die "mpirun not found (scripts/setup_deps.sh installs Open MPI)"
  # mpirun runs in the hub, where the bridge has an address every rank can reach: Open
  # MPI's PMIx server otherwise listens on loopback only, which no rank's namespace
  # sees. TCP only (no shared memory), pinned to the cluster's subnet.
  # shellcheck disable=SC2086
  ip netns exec "$(hub "$name")" env \
    PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include="$SUBNET" \
    OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include="$SUBNET" OMPI_MCA_oob_tcp_if_include="$SUBNET" \
    mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
    -x PMIX_MCA_ptl_tcp_remote_connections -x PMIX_MCA_ptl_tcp_if_include \
    $extra bash "$SCRIPT" _enter "$name" -- "$@"
}

cmd_run() {
  [ $# -ge 2 ] || die "usage: run RANKS RATE [--name NAME] [--mpi \"ARGS\"] -- COMMAND..."
  local ranks="$1" rate="$2"
  shift 2
  local name="ec$$" mpi=""
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case "$1" in
      --name) name="$2"; shift 2 ;;
      --mpi) mpi="$2"; shift 2 ;;
      *) die "run: unknown option '$1'" ;;
    esac
  done
  [ "${1:-}" = "--" ] || die "usage: run RANKS RATE [--name NAME] [--mpi \"ARGS\"] -- COMMAND..."
  shift
  [ $# -gt 0 ] || die "run: no command"
  # Down whatever happens: a normal end, an error, Ctrl-C or a kill by the caller
  # (the trap runs after this function's locals are gone: a global holds the name).
  RUN_CLUSTER="$name"
  trap 'cmd_down "$RUN_CLUSTER"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  cmd_up "$name" "$ranks" "$rate" >&2
  local status=0
  cmd_mpirun "$name" --mpi "$mpi" -- "$@" || status=$?
  return "$status"
}

main() {
  [ $# -ge 1 ] || die "usage: $0 run|up|mpirun|rate|link|bytes|down|check ... (see the file's header)"
  local verb="$1"
  shift
  case "$verb" in
    run) cmd_run "$@" ;;
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    mpirun) cmd_mpirun "$@" ;;
    rate) cmd_rate "$@" ;;
    link) cmd_link "$@" ;;
    bytes) cmd_bytes "$@" ;;
    _enter) cmd_enter "$@" ;;
    check)
      local why
      why="$(why_not)"
      if [ -n "$why" ]; then echo "emulated_cluster: cannot run here: $why"; exit 2; fi
      ;;
    *) die "unknown command '$verb' (run, up, mpirun, rate, link, bytes, down, check)" ;;
  esac
}

main "$@"
