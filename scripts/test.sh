#!/usr/bin/env bash
# The whole test suite: formatting, vet, unit and in-process tests (race detector on), and the
# root-only network-namespace lab (test/lab), which skips with one line when not root.
# Run from anywhere; as root for the lab tier.
set -euo pipefail
cd "$(dirname "$0")/.."

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
