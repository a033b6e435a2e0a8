#!/bin/sh
# A Slurm array: SLURM_ARRAY_TASK_ID is 0 to 15 with --array=0-15; each task
# explores its shard on its CPUs. Submit with `sbatch docs/ci/slurm-array.sh`,
# then merge once every task ended:
#   sbatch --dependency=afterany:<array job id> --wrap 'build-release/tools/lockstep merge shard-*.json --json results.json --junit junit.xml'
#SBATCH --array=0-15
#SBATCH --cpus-per-task=4
build-release/tools/lockstep explore scenarios/lanes_per_key_order.json --seeds 1..1600000 --stop-after 0 \
  --jobs "$SLURM_CPUS_PER_TASK" --shard "$SLURM_ARRAY_TASK_ID/16" --json "shard-$SLURM_ARRAY_TASK_ID.json"
rc=$?
# 0, 1 or 3: the shard ran (nothing found, a failure, a liveness failure).
[ $rc -le 1 ] || [ $rc -eq 3 ]
