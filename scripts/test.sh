#!/usr/bin/env bash
# The whole test suite: formatting, vet, unit and in-process tests (race detector on), and the
# network-namespace lab (test/lab). As root, the lab's components are installed when missing
# (Debian packages, and crictl from the Go module proxy); without root the lab skips with one line.
# -race needs a C compiler: as root, gcc is installed when missing (PULLPATH_LAB=0 or not).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && ! command -v gcc >/dev/null 2>&1; then
  echo "test: installing gcc (the race detector needs a C compiler)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq gcc >/dev/null
fi

if [ "$(id -u)" = 0 ] && [ "${PULLPATH_LAB:-1}" != 0 ]; then
  missing=""
  for b in containerd docker-registry dnsmasq htpasswd nft ip; do
    command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
  done
  if [ -n "$missing" ]; then
    echo "lab: installing containerd docker-registry dnsmasq apache2-utils nftables (missing:$missing)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq containerd docker-registry dnsmasq apache2-utils nftables iproute2 >/dev/null
  fi
  if ! command -v crictl >/dev/null 2>&1; then
    echo "lab: building crictl v1.37.0 (Debian 12 has no cri-tools)"
    GOBIN=/usr/local/bin go install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0
  fi
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...

report=$(mktemp)
trap 'rm -f "$report"' EXIT
PULLPATH_LAB_REPORT="$report" go test -race -count=1 -timeout 15m ./...
if [ -s "$report" ]; then
  echo
  echo "lab tier: real containerd, pullpath explain and pullpath probe, per case"
  cat "$report"
fi
