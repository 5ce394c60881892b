#!/usr/bin/env bash
# Builds helm v4.3.2 (helm.sh/helm/v4, from the Go module proxy; not in pullpath's go.mod) into a
# cache outside the repository keyed by version, build flags and the Go version, for the tests of
# the Helm chart (deploy/helm/pullpath-watch: helm lint, helm template). Prints the directory.
# A cold build takes about 3 min on 2 cores; a cache hit takes no time. The tests never let helm
# fetch a repository or a chart: they run it on the chart's directory only.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${PULLPATH_CACHE:-/var/cache/pullpath}
helm=v4.3.2
ld="-s -w -X helm.sh/helm/v4/internal/version.version=$helm"
key=$( { echo "helm $helm CGO_ENABLED=0 -trimpath -ldflags=$ld"; go version; } | sha256sum | cut -c1-16)
out="$root/helm-$helm-$key"
if [ -x "$out/helm" ]; then
  echo "$out"; exit 0
fi
echo "helm chart tests: building helm $helm into $out (cold: about 3 min on 2 cores)" >&2
tmp="$out.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
GOBIN="$tmp" CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags "$ld" "helm.sh/helm/v4/cmd/helm@$helm" >&2
rm -rf "$out"; mv "$tmp" "$out"
echo "$out"
