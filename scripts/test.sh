#!/usr/bin/env bash
# The whole test suite: formatting, vet, unit and in-process tests (race detector on), and the
# root-only lab tier when it exists and the machine allows it. Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -race -count=1 -timeout 15m ./...
