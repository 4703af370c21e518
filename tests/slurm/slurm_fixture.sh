#!/usr/bin/env bash
# A real single-node Slurm (Debian 12's slurmctld, slurmd and munge) in a temporary directory, for
# tests (issue 14; the facts it follows: docs/sweeps.md, "A test cluster"). Needs root.
#   source slurm_fixture.sh; slurm_start DIR   exports SLURM_CONF; the node is idle when it returns
#   slurm_stop DIR                              stops the daemons by their pid files, munged last
# Ports away from the defaults (6817/6818), so a real Slurm on the machine is not disturbed.

slurm_start() {
  local dir=$1 host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(($(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) / 2))
  mkdir -p "$dir"/{munge,state,spool,log,run}
  chmod 700 "$dir/munge"
  # munge: its own key, socket, pid, log and seed under the directory.
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 600 "$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" --force || return 1
  munge -n -S "$dir/munge/munge.socket" | unmunge -S "$dir/munge/munge.socket" >/dev/null || {
    echo "slurm fixture: munge does not work" >&2; return 1; }
  cat > "$dir/slurm.conf" <<EOF
ClusterName=tensorscope-test
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${TS_SLURMCTLD_PORT:-16817}
SlurmdPort=${TS_SLURMD_PORT:-16818}
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=300
SchedulerType=sched/backfill
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF" || return 1
  slurmd -f "$SLURM_CONF" || return 1
  local i
  for i in $(seq 1 100); do
    if sinfo --noheader -o '%T' 2>/dev/null | grep -qx idle; then return 0; fi
    sleep 0.2
  done
  echo "slurm fixture: the node did not become idle; sinfo says: $(sinfo 2>&1)" >&2
  return 1
}

slurm_stop() {
  local dir=$1 f pid
  for f in "$dir/run/slurmd.pid" "$dir/run/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  return 0
}
