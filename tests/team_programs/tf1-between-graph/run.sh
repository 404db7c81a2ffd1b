#!/bin/sh
# The algorithm team's launcher, called as the seed's pods call it:
#   sh ./run.sh <ps_hosts> <worker_hosts> <job> <index> <ps_n> <worker_n>
set -e
ps_hosts=$1 worker_hosts=$2 job=$3 index=$4 ps_n=$5 worker_n=$6
shift 6
exec python train.py --ps_hosts="$ps_hosts" --worker_hosts="$worker_hosts" \
    --job_name="$job" --task_index="$index" --ps_num="$ps_n" --worker_num="$worker_n" "$@"
