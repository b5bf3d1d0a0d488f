#!/bin/bash
# GNU parallel over ssh: one shard of the fleet per host, then one merged report.
#
#   HOSTS=node-a,node-b,node-c docs/fleet/parallel-ssh.sh /srv/fleet.toml /srv/reports
#
# Every host must have bbg-migrate on its PATH (or set BBG) and see the manifest, sources,
# stores and report directory at the same paths (a shared filesystem such as NFS).  HOSTS is a
# GNU parallel --sshlogin list; ":" is this machine.  The number of shards is the number of
# hosts unless SHARDS says otherwise; each host runs one shard at a time.  Rerun the script
# after a failure or a kill: every job resumes where it stood (--skip-done skips the jobs
# that already succeeded without re-reading their sources).
set -euo pipefail

MANIFEST=${1:?usage: parallel-ssh.sh FLEET.toml REPORT_DIR}
REPORTS=${2:?usage: parallel-ssh.sh FLEET.toml REPORT_DIR}
HOSTS=${HOSTS:-:}
BBG=${BBG:-bbg-migrate}
WORKERS=${WORKERS:-2}
IFS=, read -r -a host_list <<<"$HOSTS"
SHARDS=${SHARDS:-${#host_list[@]}}

# One shard per job slot; --halt never: a shard whose jobs failed does not stop the others.
parallel --sshlogin "$HOSTS" --jobs 1 --halt never --tag \
  "$BBG" fleet run "$MANIFEST" --shard "{}/$SHARDS" --workers "$WORKERS" \
  --report-dir "$REPORTS" --skip-done ::: $(seq 0 $((SHARDS - 1))) || true

# The merged report's exit status is the fleet's: the worst job's, at least 1 on anomalies
# (a shard that never reported is one).
exec "$BBG" fleet report "$REPORTS" --manifest "$MANIFEST" --html "$REPORTS/fleet.html"
