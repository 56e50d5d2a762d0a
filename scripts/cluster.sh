#!/usr/bin/env bash
# cluster.sh: a multi-host test cluster on one machine. Each host is a network namespace with one
# interface (eth0, address 10.77.0.I/24, loopback up) plugged into a bridge that lives in a
# namespace of its own. Nothing is added to the root namespace, so no packet can leave the cluster.
#
#   scripts/cluster.sh [--run ID] [--owner PID] COMMAND ...
#     check                       exit 0 when this machine can build a cluster, else print why
#     up N                        build hosts 1..N (10.77.0.1 .. 10.77.0.N)
#     down                        kill every process in the run's hosts, delete them (idempotent)
#     reap                        tear down leftovers of runs whose owner process is gone
#     watch                       wait (polling each second) until the run's --owner has gone, then
#                                 tear the run down; returns at once when the run is torn down first
#     ns I | addr I               print host I's namespace name / address
#     pids I                      print the processes running in host I
#     exec I CMD...               run CMD in host I
#     link I down|up              take host I's link down or up (ip link set eth0 down|up)
#     loss I PERCENT [in|out|both]  drop PERCENT % of host I's packets at random (default both)
#     drop I [in|out|both] [PORT] drop all of host I's packets in that direction (default both),
#                                 except TCP packets from or to PORT when given
#     cap I RATE [in|out|both]    cap host I's bandwidth (tc tbf; RATE as tc writes it: 1mbit, 500kbit)
#     clear I                     remove host I's loss, drop and cap rules and bring its link up
#     counters I                  print what the faults did: dropped_in/out PACKETS, capped_in/out
#                                 BYTES (sent through the cap) and OVERLIMITS (packets held back)
#
# The run id (--run, or DDP4J_CLUSTER_RUN, default "0": 1-12 characters of a-z, 0-9) is part of
# every name (d4c-ID-h1 .. d4c-ID-hN, bridge namespace d4c-ID-sw), so two runs never collide.
# With --owner PID (or DDP4J_CLUSTER_OWNER) the run is torn down once that process has gone: at
# once by a `watch` of the run, else by the next `up`, `down` or `reap` of any run. So a test JVM
# killed midway leaves no namespace, process or filter behind.
# Needs root, iproute2 (ip netns, tc) and nftables (or iptables) for loss and drop.
set -Eeuo pipefail

readonly PREFIX=d4c
readonly SUBNET=10.77.0
readonly STATE_ROOT=/run/ddp4j-cluster
readonly MAX_HOSTS=200

die() {
  echo "cluster.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '6,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

run="${DDP4J_CLUSTER_RUN:-0}"
owner="${DDP4J_CLUSTER_OWNER:-}"
while (($#)); do
  case "$1" in
    --run) (($# >= 2)) || usage; run="$2"; shift 2 ;;
    --owner) (($# >= 2)) || usage; owner="$2"; shift 2 ;;
    -h|--help) sed -n '6,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
(($#)) || usage
[[ "$run" =~ ^[a-z0-9]{1,12}$ ]] || die "run id '$run' must be 1-12 characters of a-z and 0-9 (it becomes part of namespace names)"
[[ -z "$owner" || "$owner" =~ ^[0-9]+$ ]] || die "--owner '$owner' must be a process id"

host_ns() { echo "$PREFIX-$1-h$2"; }
switch_ns() { echo "$PREFIX-$1-sw"; }
state_dir() { echo "$STATE_ROOT/$1"; }

# Fails unless this process may build namespaces; prints the reason.
require_tools() {
  [[ $(id -u) -eq 0 ]] || die "must run as root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN (try: sudo $0 ...)"
  command -v ip >/dev/null 2>&1 || die "the 'ip' command is missing: apt-get install -y iproute2 (or run scripts/setup.sh)"
  ip netns list >/dev/null 2>&1 || die "'ip netns' does not work here ($(ip netns list 2>&1 | head -1)); this kernel or container lacks network namespaces"
}

# The hosts of a run: the numbers I of its d4c-ID-hI namespaces, ascending.
hosts_of() {
  ip netns list 2>/dev/null | awk '{print $1}' | sed -n "s/^$PREFIX-$1-h\([0-9]\{1,\}\)\$/\1/p" | sort -n
}

# Every run id with a namespace or a state directory.
all_runs() {
  {
    ip netns list 2>/dev/null | awk '{print $1}' | sed -n "s/^$PREFIX-\([a-z0-9]\{1,12\}\)-\(sw\|h[0-9]\{1,\}\)\$/\1/p"
    if [[ -d "$STATE_ROOT" ]]; then ls -1 "$STATE_ROOT"; fi
  } | sort -u
}

# "PID STARTTIME" of a live process (the start time tells a reused pid apart), or nothing.
process_identity() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  # field 22 (start time) counted after the ")" that ends the command name
  echo "$1 $(echo "${stat##*)}" | awk '{print $20}')"
}

# Whether the run's recorded owner has gone. A run without an owner file is never reaped, except
# when it has namespaces but no state directory at all (a crash between the two in `up`).
owner_gone() {
  local dir recorded
  dir="$(state_dir "$1")"
  if [[ ! -d "$dir" ]]; then
    return 0
  fi
  [[ -f "$dir/owner" ]] || return 1
  recorded="$(cat "$dir/owner")"
  [[ "$(process_identity "${recorded%% *}")" != "$recorded" ]]
}

# Kills every process in namespace $1 (SIGKILL ends stopped processes too) and waits, at most 10 s,
# until none is left: a namespace is only gone once its last process is.
kill_namespace_processes() {
  local ns="$1" pids tries=0
  while pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')" && [[ -n "${pids// /}" ]]; do
    # shellcheck disable=SC2086 # a list of pids
    kill -KILL $pids 2>/dev/null || true
    ((++tries <= 100)) || { echo "cluster.sh: processes $pids in $ns survived SIGKILL for 10 s" >&2; return 1; }
    sleep 0.1
  done
}

teardown_run() {
  local r="$1" ns rc=0
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$PREFIX-$r-(sw|h[0-9]+)\$" || true); do
    kill_namespace_processes "$ns" || rc=1
    ip netns del "$ns" 2>/dev/null || [[ ! -e "/run/netns/$ns" ]] || { echo "cluster.sh: cannot delete namespace $ns" >&2; rc=1; }
  done
  rm -rf "$(state_dir "$r")"
  return "$rc"
}

reap() {
  local r
  for r in $(all_runs); do
    [[ "$r" == "$run" ]] && continue
    if owner_gone "$r"; then
      echo "cluster.sh: removing leftovers of run $r (its owner has gone)" >&2
      teardown_run "$r" || true
    fi
  done
}

host_index() {
  local i="$1"
  [[ "$i" =~ ^[0-9]+$ ]] || die "host '$i' must be a number, 1..N"
  [[ -e "/run/netns/$(host_ns "$run" "$i")" ]] || die "host $i of run $run does not exist (cluster.sh --run $run up N first; hosts: $(hosts_of "$run" | tr '\n' ' '))"
  echo "$i"
}

direction() {
  case "${1:-both}" in
    in|out|both) echo "${1:-both}" ;;
    *) die "direction '$1' must be in, out or both" ;;
  esac
}

up() {
  local n="$1" sw i ns dir
  [[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= MAX_HOSTS)) || die "up N: N must be 1..$MAX_HOSTS, got '$n'"
  reap
  sw="$(switch_ns "$run")"
  if [[ -e "/run/netns/$sw" ]]; then
    die "run $run is already up ($(hosts_of "$run" | wc -l) hosts): cluster.sh --run $run down first, or pick another --run"
  fi
  dir="$(state_dir "$run")"
  mkdir -p "$dir"
  if [[ -n "$owner" ]]; then
    [[ -n "$(process_identity "$owner")" ]] || die "--owner $owner is not a running process"
    process_identity "$owner" > "$dir/owner"
  fi
  trap 'teardown_run "$run" >/dev/null 2>&1 || true' ERR
  ip netns add "$sw" || die "cannot create network namespace $sw (in a container this needs --privileged)"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for ((i = 1; i <= n; i++)); do
    ns="$(host_ns "$run" "$i")"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add eth0 type veth peer name "h$i" netns "$sw"
    ip -n "$sw" link set "h$i" master br0
    ip -n "$sw" link set "h$i" up
    ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  trap - ERR
  echo "cluster.sh: run $run is up: $n host(s), $(host_ns "$run" 1) ($SUBNET.1) .. $(host_ns "$run" "$n") ($SUBNET.$n)"
}

# The host's packet filter: table inet d4c with an input and an output chain (nftables), or the
# INPUT/OUTPUT chains of iptables when nft is missing. $3: the rule's verdict condition.
have_nft() { command -v nft >/dev/null 2>&1; }

filter_reset() {
  local ns="$1" dir="$2"
  if have_nft; then
    ip netns exec "$ns" nft -f - <<EOF
table inet d4c {
  chain input { type filter hook input priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
EOF
    [[ "$dir" == out ]] || ip netns exec "$ns" nft flush chain inet d4c input
    [[ "$dir" == in ]] || ip netns exec "$ns" nft flush chain inet d4c output
  elif command -v iptables >/dev/null 2>&1; then
    [[ "$dir" == out ]] || ip netns exec "$ns" iptables -F INPUT
    [[ "$dir" == in ]] || ip netns exec "$ns" iptables -F OUTPUT
  else
    die "neither nft nor iptables is installed: apt-get install -y nftables (or run scripts/setup.sh)"
  fi
}

# Drops PERCENT % (1..100) of eth0's packets in direction dir at random; TCP packets from or to
# port `spare` (when given) pass untouched.
filter_loss() {
  local ns="$1" dir="$2" percent="$3" spare="${4:-}"
  filter_reset "$ns" "$dir"
  if have_nft; then
    local cond=""
    ((percent < 100)) && cond="numgen random mod 100 < $percent"
    if [[ -n "$spare" ]]; then
      [[ "$dir" == out ]] || ip netns exec "$ns" nft add rule inet d4c input iifname eth0 tcp sport "$spare" accept
      [[ "$dir" == out ]] || ip netns exec "$ns" nft add rule inet d4c input iifname eth0 tcp dport "$spare" accept
      [[ "$dir" == in ]] || ip netns exec "$ns" nft add rule inet d4c output oifname eth0 tcp sport "$spare" accept
      [[ "$dir" == in ]] || ip netns exec "$ns" nft add rule inet d4c output oifname eth0 tcp dport "$spare" accept
    fi
    [[ "$dir" == out ]] || ip netns exec "$ns" nft add rule inet d4c input iifname eth0 $cond counter drop
    [[ "$dir" == in ]] || ip netns exec "$ns" nft add rule inet d4c output oifname eth0 $cond counter drop
  else
    local match=()
    ((percent < 100)) && match=(-m statistic --mode random --probability "$(awk "BEGIN{print $percent/100}")")
    if [[ -n "$spare" ]]; then
      local flag
      for flag in --sport --dport; do
        [[ "$dir" == out ]] || ip netns exec "$ns" iptables -A INPUT -i eth0 -p tcp "$flag" "$spare" -j ACCEPT
        [[ "$dir" == in ]] || ip netns exec "$ns" iptables -A OUTPUT -o eth0 -p tcp "$flag" "$spare" -j ACCEPT
      done
    fi
    [[ "$dir" == out ]] || ip netns exec "$ns" iptables -A INPUT -i eth0 "${match[@]}" -j DROP
    [[ "$dir" == in ]] || ip netns exec "$ns" iptables -A OUTPUT -o eth0 "${match[@]}" -j DROP
  fi
}

cap() {
  local i="$1" rate="$2" dir="$3" ns sw
  ns="$(host_ns "$run" "$i")"
  sw="$(switch_ns "$run")"
  [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?([kmg]?(bit|bps))$ ]] || die "rate '$rate' must be a number and a unit as tc writes it, e.g. 10mbit, 500kbit, 1mbps"
  # tbf on the egress of each side: host I's eth0 sends, the bridge port hI delivers to host I.
  local args=(tbf rate "$rate" burst 64kb latency 200ms)
  [[ "$dir" == in ]] || tc -n "$ns" qdisc replace dev eth0 root "${args[@]}"
  [[ "$dir" == out ]] || tc -n "$sw" qdisc replace dev "h$i" root "${args[@]}"
}

clear_host() {
  local i="$1" ns sw
  ns="$(host_ns "$run" "$i")"
  sw="$(switch_ns "$run")"
  if have_nft; then
    ip netns exec "$ns" nft delete table inet d4c 2>/dev/null || true
  elif command -v iptables >/dev/null 2>&1; then
    ip netns exec "$ns" iptables -F INPUT 2>/dev/null || true
    ip netns exec "$ns" iptables -F OUTPUT 2>/dev/null || true
  fi
  tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
  tc -n "$sw" qdisc del dev "h$i" root 2>/dev/null || true
  ip -n "$ns" link set eth0 up
}

# Counts of what host I's faults did, one "name value" line each.
counters() {
  local i="$1" ns sw dir chain total
  ns="$(host_ns "$run" "$i")"
  sw="$(switch_ns "$run")"
  for dir in in out; do
    total=0
    if have_nft; then
      chain=input; [[ "$dir" == out ]] && chain=output
      total="$({ ip netns exec "$ns" nft list chain inet d4c "$chain" 2>/dev/null || true; } \
        | awk '{for (k = 1; k < NF; k++) if ($k == "packets") s += $(k + 1)} END {print s + 0}')"
    elif command -v iptables >/dev/null 2>&1; then
      chain=INPUT; [[ "$dir" == out ]] && chain=OUTPUT
      total="$({ ip netns exec "$ns" iptables -L "$chain" -v -n -x 2>/dev/null || true; } | awk '$3 == "DROP" {s += $1} END {print s + 0}')"
    fi
    echo "dropped_$dir $total"
  done
  # tc -s: "Sent B bytes P pkt (dropped D, overlimits O requeues R)"
  { tc -s -n "$sw" qdisc show dev "h$i" 2>/dev/null || true; } | awk '/tbf/ {t = 1} t && /Sent/ {print "capped_in " $2 "\noverlimits_in " $9; exit}' | tr -d ','
  { tc -s -n "$ns" qdisc show dev eth0 2>/dev/null || true; } | awk '/tbf/ {t = 1} t && /Sent/ {print "capped_out " $2 "\noverlimits_out " $9; exit}' | tr -d ','
}

cmd="$1"
shift
# Commands that act on host I check it first (a failing $(...) inside an argument would not stop the script).
case "$cmd" in
  ns|addr|pids|exec|link|loss|drop|cap|clear|counters)
    (($# >= 1)) || usage
    require_tools
    i="$(host_index "$1")"
    ns="$(host_ns "$run" "$i")"
    shift
    ;;
esac
case "$cmd" in
  check)
    require_tools
    probe="$PREFIX-probe$$"
    ip netns add "$probe" 2>/dev/null || die "cannot create a network namespace ($(ip netns add "$probe" 2>&1 | head -1)); in a container this needs --privileged"
    ip netns del "$probe"
    echo "cluster.sh: network namespaces work here"
    ;;
  up)
    (($# == 1)) || usage
    require_tools
    up "$1"
    ;;
  down)
    (($# == 0)) || usage
    require_tools
    teardown_run "$run"
    reap
    ;;
  reap)
    require_tools
    reap
    ;;
  watch)
    require_tools
    [[ -f "$(state_dir "$run")/owner" ]] || die "watch: run $run has no owner (up it with --owner PID)"
    while [[ -d "$(state_dir "$run")" ]] && ! owner_gone "$run"; do
      sleep 1
    done
    if [[ -d "$(state_dir "$run")" ]]; then
      echo "cluster.sh: the owner of run $run has gone; tearing the run down" >&2
      teardown_run "$run"
    fi
    ;;
  ns) echo "$ns" ;;
  addr) echo "$SUBNET.$i" ;;
  pids) ip netns pids "$ns" ;;
  exec)
    (($# >= 1)) || usage
    exec ip netns exec "$ns" "$@"
    ;;
  link)
    (($# == 1)) || usage
    [[ "$1" == down || "$1" == up ]] || die "link I down|up: got '$1'"
    ip -n "$ns" link set eth0 "$1"
    ;;
  loss)
    (($# == 1 || $# == 2)) || usage
    [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 100)) || die "loss I PERCENT: PERCENT must be 1..100, got '$1'"
    dir="$(direction "${2:-both}")"
    filter_loss "$ns" "$dir" "$1"
    ;;
  drop)
    (($# <= 2)) || usage
    dir="$(direction "${1:-both}")"
    [[ -z "${2:-}" || "$2" =~ ^[0-9]+$ ]] || die "drop I DIR PORT: PORT must be a TCP port number, got '$2'"
    filter_loss "$ns" "$dir" 100 "${2:-}"
    ;;
  cap)
    (($# == 1 || $# == 2)) || usage
    dir="$(direction "${2:-both}")"
    cap "$i" "$1" "$dir"
    ;;
  clear)
    (($# == 0)) || usage
    clear_host "$i"
    ;;
  counters)
    (($# == 0)) || usage
    counters "$i"
    ;;
  *)
    usage
    ;;
esac
