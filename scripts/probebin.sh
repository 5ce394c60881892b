#!/usr/bin/env bash
# Rebuilds the probe-only pullpath for linux/amd64 and linux/arm64 that every pullpath build embeds
# (internal/probebin: zstd-compressed, with stamp.json naming the sources they came from). Run it
# and commit internal/probebin when TestFresh says the builds are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./internal/probebin/gen "$@"
