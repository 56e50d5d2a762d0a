#!/usr/bin/env bash
# A throw-away one-node SLURM cluster on this machine, for trying `srun` with ddp4j and for the
# SLURM tests: munged, slurmctld and slurmd from Debian (slurmctld slurmd slurm-client munge),
# every file (config, munge key, state, spool, logs, sockets) in one folder.
#
#   scripts/slurm-local.sh start DIR [--owner PID]   start the daemons; DIR must not exist
#   scripts/slurm-local.sh stop DIR                  stop them and remove DIR
#   scripts/slurm-local.sh env DIR                   print the `export SLURM_CONF=...` to use srun
#
# Then: export SLURM_CONF=DIR/slurm.conf; srun -n 2 --time=5 java -cp ... MainClass
#
# Needs root (slurmd runs as root; munged runs as the munge user). Missing packages are installed
# with apt-get when run as root. `start` waits at most DDP4J_SLURM_START_TIMEOUT seconds (default
# 60) for the node to be idle; on failure it stops what it started and prints the daemons' logs.
# With --owner PID a watchdog stops the cluster when process PID ends (a test JVM killed with -9
# leaves nothing running), and in any case after DDP4J_SLURM_LIFETIME seconds (default 3600).
# Exit codes: 0 done; 1 failed; 2 usage; 3 not root or the packages cannot be installed (tests
# skip on 3).
set -euo pipefail

usage() {
  echo "usage: $0 start DIR [--owner PID] | stop DIR | env DIR" >&2
  exit 2
}
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac

packages=(slurmctld slurmd slurm-client munge)

# Installs what is missing (root only); exit 3 when that is impossible.
ensure_packages() {
  local missing=() pkg
  for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "slurm-local.sh: missing Debian packages ${missing[*]}, and not root to install them" >&2
    exit 3
  fi
  echo "slurm-local.sh: installing ${missing[*]}" >&2
  # --no-install-recommends: the recommended plugins pull in ROCm, HDF5, MySQL... which a test does not need
  if ! { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends "${missing[@]}" \
        || { timeout 300 apt-get update -q && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q \
               --no-install-recommends "${missing[@]}"; }; } >&2; then
    echo "slurm-local.sh: could not install ${missing[*]} with apt-get" >&2
    exit 3
  fi
}

# A TCP port nobody listens on now (the kernel picks it).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Kills the process in pid file $1 (and waits, bounded, for it to go).
kill_pidfile() {
  local file=$1 pid i
  [[ -s $file ]] || return 0
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# Kills process $1 and everything below it, children first.
kill_tree() {
  local pid=$1 child
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null || true); do
    kill_tree "$child"
  done
  kill -KILL "$pid" 2>/dev/null || true
}

stop() {
  local dir=$1
  [[ -d $dir ]] || return 0
  if [[ ! -f $dir/slurm.conf && ! -f $dir/pids/munged.pid ]]; then
    echo "slurm-local.sh: $dir is not a folder made by 'slurm-local.sh start'; not removing it" >&2
    exit 1
  fi
  # the watchdog first, so that it does not race this stop
  kill_pidfile "$dir/pids/watchdog.pid"
  # cancel what still runs while the daemons can do it properly (bounded: they may be gone already)
  export SLURM_CONF=$dir/slurm.conf
  if kill -0 "$(cat "$dir/pids/slurmctld.pid" 2>/dev/null || echo x)" 2>/dev/null; then
    local i jobs
    jobs=$(timeout 5 squeue -h -o %i 2>/dev/null || true)
    [[ -z $jobs ]] || timeout 10 scancel $jobs 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
      [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null || true) ]] && break
      sleep 0.5
    done
  fi
  kill_pidfile "$dir/pids/slurmd.pid"
  kill_pidfile "$dir/pids/slurmctld.pid"
  kill_pidfile "$dir/pids/munged.pid"
  # slurmstepd (one per job step, re-parented to init) and its tasks can outlive slurmd: this
  # cluster's carry its SLURM_CONF
  local step
  for step in $(pgrep -x slurmstepd 2>/dev/null || true); do
    if tr '\0' '\n' <"/proc/$step/environ" 2>/dev/null | grep -qx "SLURM_CONF=$dir/slurm.conf"; then
      kill_tree "$step"
    fi
  done
  rm -rf -- "$dir"
}

write_config() {
  local dir=$1 node=$2 cpus=$3 ctld_port=$4 slurmd_port=$5
  cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm-local.sh: one node, everything under $dir
ClusterName=ddp4j-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/pids/slurmctld.pid
SlurmdPidFile=$dir/pids/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# no cgroups in a container: track processes by parentage, bind nothing, account nothing
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=60 State=UP OverSubscribe=NO
EOF
}

start() {
  local dir=$1 owner=${2:-}
  if [[ -e $dir ]]; then
    echo "slurm-local.sh: $dir exists; give a new folder (it is removed by stop)" >&2
    exit 2
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "slurm-local.sh: slurmd must run as root (it starts jobs as their user); run as root" >&2
    exit 3
  fi
  ensure_packages
  mkdir -p "$dir"/{munge,state,spool,pids,log}
  dir=$(cd "$dir" && pwd)
  if ! setpriv --reuid=munge --regid=munge --init-groups test -x "$dir"; then
    echo "slurm-local.sh: munged runs as user munge, which cannot enter $dir: make its parent folders searchable" \
      "(chmod o+x), or choose a folder under /tmp" >&2
    rm -rf -- "$dir"
    exit 1
  fi
  # from here on, a failure stops whatever was started
  trap 'rc=$?; if ((rc != 0)); then echo "slurm-local.sh: start failed; logs:" >&2; tail -n 20 "$dir"/log/*.log "$dir"/munge/*.log "$dir"/munge/*.out >&2 || true; stop "$dir"; fi' EXIT

  local node cpus
  node=$(hostname -s)
  cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) # nproc obeys OMP_NUM_THREADS, which test runs set to 1
  write_config "$dir" "$node" "$cpus" "$(free_port)" "$(free_port)"

  # munge: its own key (never /etc/munge's), run as the munge user, which must own its folder
  mungekey -c -k "$dir/munge/munge.key" >/dev/null
  chown -R munge:munge "$dir/munge"
  chmod 755 "$dir/munge" # munged wants its socket's folder open to all; the key itself stays 0600
  chmod 600 "$dir/munge/munge.key"
  setsid setpriv --reuid=munge --regid=munge --init-groups munged -F --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
    </dev/null >>"$dir/munge/munged.out" 2>&1 &
  echo $! >"$dir/pids/munged.pid"
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -S $dir/munge/munge.socket ]] && break
    kill -0 "$(<"$dir/pids/munged.pid")" 2>/dev/null || { echo "slurm-local.sh: munged exited during start" >&2; exit 1; }
    sleep 0.1
  done

  export SLURM_CONF=$dir/slurm.conf
  setsid slurmctld -D -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/pids/slurmctld.pid"
  setsid slurmd -D -f "$dir/slurm.conf" -N "$node" </dev/null >>"$dir/log/slurmd.out" 2>&1 &
  echo $! >"$dir/pids/slurmd.pid"
  # the daemons also write these pid files themselves (same pid, since -D does not fork)

  if [[ -n $owner ]]; then
    local lifetime=${DDP4J_SLURM_LIFETIME:-3600}
    # the watchdog: stops the cluster when its owner ends, or after the lifetime at the latest
    setsid bash -c '
      owner=$1 lifetime=$2 script=$3 dir=$4
      end=$((SECONDS + lifetime))
      while kill -0 "$owner" 2>/dev/null && ((SECONDS < end)); do sleep 1; done
      rm -f "$dir/pids/watchdog.pid"
      exec "$script" stop "$dir"' watchdog "$owner" "$lifetime" "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" "$dir" \
      </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/pids/watchdog.pid"
  fi

  local deadline=$((SECONDS + ${DDP4J_SLURM_START_TIMEOUT:-60})) state=""
  while ((SECONDS < deadline)); do
    for d in munged slurmctld slurmd; do
      if ! kill -0 "$(<"$dir/pids/$d.pid")" 2>/dev/null; then
        echo "slurm-local.sh: $d exited during start" >&2
        exit 1
      fi
    done
    state=$(timeout 5 sinfo -h -N -n "$node" -o '%T' 2>/dev/null || true)
    if [[ $state == idle ]]; then
      trap - EXIT
      echo "slurm-local.sh: one-node SLURM up on $node ($cpus CPUs); export SLURM_CONF=$dir/slurm.conf" >&2
      return 0
    fi
    sleep 0.5
  done
  echo "slurm-local.sh: node $node not idle after ${DDP4J_SLURM_START_TIMEOUT:-60} s (state '${state}')" >&2
  exit 1
}

(($# >= 2)) || usage
cmd=$1 dir=$2
shift 2
case $cmd in
  start)
    owner=""
    if (($#)); then
      [[ $1 == --owner && $# -eq 2 && $2 =~ ^[0-9]+$ ]] || usage
      owner=$2
    fi
    start "$dir" "$owner"
    ;;
  stop) (($# == 0)) || usage; stop "$dir" ;;
  env) (($# == 0)) || usage; echo "export SLURM_CONF=$(cd "$dir" && pwd)/slurm.conf" ;;
  *) usage ;;
esac
