#!/usr/bin/env bash
# verify's two deliveries side by side on a cluster tier of eight one-node pools (real
# kube-apiserver, kubelets and containerd; root): bytes stored in the API per run, the time from
# a probe pod's creation to the probe's start, and the wall time for 1, 4 and 8 pools.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-delivery: the cluster tier needs root" >&2; exit 2; }
PULLPATH_KUBEBINS=$(bash scripts/kubebins.sh)
export PULLPATH_KUBEBINS PULLPATH_BENCH=1
go test -count=1 -timeout 20m -run '^TestDeliveryBenchmark$' -v ./test/cluster/ | grep -v '^=== RUN' 
