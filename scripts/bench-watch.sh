#!/usr/bin/env bash
# The watch benchmark (TestWatchBudget): what `pullpath watch` costs per node in API requests and
# bytes, registry requests and the delivered probe, on four one-node pools of real kubelets
# (real kube-apiserver, kubelets and containerd; root). About 8 min: cluster bring-up, a first
# round, a 5 min window (PULLPATH_BENCH_WINDOW changes it).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-watch: the cluster tier needs root" >&2; exit 2; }
PULLPATH_KUBEBINS=$(bash scripts/kubebins.sh)
export PULLPATH_KUBEBINS PULLPATH_BENCH=1
go test -count=1 -timeout 30m -run '^TestWatchBudget$' -v ./test/cluster/ | grep -v '^=== RUN'
