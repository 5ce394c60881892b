#!/usr/bin/env bash
# pod --all -A, pod NAME and verify's choice of nodes on the fleet tier's full preset (1,000 KWOK
# nodes in 50 pools, 30,000 pods, 2,000 failing; real etcd and kube-apiserver), side by side in the
# same run with kubectl get pods -A -o json plus kubectl get events -A -o json: wall time, peak RSS
# and API requests by verb and resource (from the API server's audit log); then `pullpath watch` on
# the same preset: its memory and API requests a minute at steady state; then `pullpath watch
# --resident` on 5,000 KWOK nodes (PULLPATH_BENCH_NODES) whose agents one loopback server answers:
# its first round, then a steady window with no pod created. Root is not needed.
# PULLPATH_BENCH_PRESET=small runs it on the test run's preset.
set -euo pipefail
cd "$(dirname "$0")/.."
PULLPATH_KUBEBINS=${PULLPATH_KUBEBINS:-$(bash scripts/kubebins.sh)}
PULLPATH_KWOK=${PULLPATH_KWOK:-$(bash scripts/fleetbins.sh)}
# the comparison: kubectl at the API server's version, built from hack/kubectl into the cache
PULLPATH_KUBECTL=${PULLPATH_KUBECTL:-$(bash scripts/fleetbins.sh kubectl)/kubectl}
export PULLPATH_KUBECTL
export PULLPATH_KUBEBINS PULLPATH_KWOK PULLPATH_BENCH=1
go test -count=1 -timeout 90m -run '^(TestFleetBenchmark|TestWatchAtScale|TestResidentWatchAtScale)$' -v ./test/fleet/ | grep -v '^=== RUN'
