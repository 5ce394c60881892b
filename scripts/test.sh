#!/usr/bin/env bash
# The whole test suite: formatting, vet, unit and in-process tests (race detector on), the
# network-namespace lab (test/lab), the cluster tier (test/cluster: a real kube-apiserver, real
# kubelets and containerd) and the fleet tier's small preset (test/fleet: kube-apiserver, etcd and
# KWOK nodes and pods). As root, the components are installed when missing (Debian packages,
# crictl from the Go module proxy, containerd 2.x built by scripts/containerd2.sh, 3–11 min cold,
# and kube-apiserver, kubelet and etcd built by scripts/kubebins.sh, about 20 min cold); without
# root both tiers skip with one line. PULLPATH_LAB=0, PULLPATH_CLUSTER=0 and PULLPATH_FLEET=0 skip one
# tier.
# -race needs a C compiler: as root, gcc is installed when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/deps.sh
source scripts/deps.sh

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...

report=$(mktemp)
clusterReport=$(mktemp)
fleetReport=$(mktemp)
trap 'rm -f "$report" "$clusterReport" "$fleetReport"' EXIT
PULLPATH_LAB_REPORT="$report" PULLPATH_CLUSTER_REPORT="$clusterReport" PULLPATH_FLEET_REPORT="$fleetReport" go test -race -count=1 -timeout 25m ./...
if [ -s "$report" ]; then
  echo
  echo "lab tier: real containerd, pullpath explain and pullpath probe, per case"
  cat "$report"
fi
if [ -s "$clusterReport" ]; then
  echo
  echo "cluster tier: real kube-apiserver, kubelets and containerd"
  cat "$clusterReport"
fi
if [ -s "$fleetReport" ]; then
  echo
  echo "fleet tier: kube-apiserver, etcd and KWOK nodes and pods (small preset; scripts/bench-fleet.sh for the full one)"
  cat "$fleetReport"
fi
