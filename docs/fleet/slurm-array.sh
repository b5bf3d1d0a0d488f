#!/bin/bash
# A Slurm array that runs a fleet as 3 shards: array task I runs `--shard I/3`.
#
#   sbatch docs/fleet/slurm-array.sh                      # MANIFEST and REPORTS below, or:
#   sbatch --export=ALL,MANIFEST=/srv/fleet.toml,REPORTS=/srv/reports docs/fleet/slurm-array.sh
#
# Every node must see the manifest, sources, stores and report directory at the same paths
# (a shared filesystem).  A task that fails or is killed can simply be resubmitted
# (`sbatch --array=I ...`): the rerun resumes every job where it stood.  When all tasks have
# ended, merge the shards (the dependency runs it even if some tasks failed):
#
#   jid=$(sbatch --parsable docs/fleet/slurm-array.sh)
#   sbatch --dependency=afterany:$jid --wrap \
#     "bbg-migrate fleet report /srv/reports --manifest /srv/fleet.toml --html /srv/reports/fleet.html"
#
#SBATCH --job-name=bbg-fleet
#SBATCH --array=0-2
#SBATCH --cpus-per-task=2
#SBATCH --mem=2G
#SBATCH --output=bbg-fleet-%A_%a.out
set -euo pipefail

MANIFEST=${MANIFEST:-/srv/fleet.toml}
REPORTS=${REPORTS:-/srv/reports}
BBG=${BBG:-bbg-migrate}
# SLURM_ARRAY_TASK_COUNT is the number of tasks in the array (here 3).
SHARDS=${SLURM_ARRAY_TASK_COUNT:?run this script as a Slurm array (sbatch)}
SHARD=${SLURM_ARRAY_TASK_ID:?run this script as a Slurm array (sbatch)}

exec "$BBG" fleet run "$MANIFEST" --shard "$SHARD/$SHARDS" \
  --workers "${SLURM_CPUS_PER_TASK:-2}" --report-dir "$REPORTS"
