#!/usr/bin/env bash
# Builds the fleet tier's kwok (sigs.k8s.io/kwok v0.8.0, from the Go module proxy) and copies the
# stage files of its module beside it (kwok needs them: its binary embeds none), into a cache
# outside the repository keyed by version, build flags and the Go version. Prints the directory.
# A cold build takes about 1.5 min on 2 cores; a cache hit takes no time.
# `fleetbins.sh kubectl` builds kubectl v1.37.2 instead (hack/kubectl, the benchmark's comparison at
# the API server's version), cached the same way, and prints its directory.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${PULLPATH_CACHE:-/var/cache/pullpath}
if [ "${1:-}" = kubectl ]; then
  key=$( { cat hack/kubectl/go.sum hack/kubectl/main.go; echo "CGO_ENABLED=0 -trimpath -ldflags=-s -w, version v1.37.2"; go version; } | sha256sum | cut -c1-16)
  out="$root/kubectl-v1.37.2-$key"
  if [ -x "$out/kubectl" ]; then echo "$out"; exit 0; fi
  echo "fleet benchmark: building kubectl v1.37.2 into $out" >&2
  tmp="$out.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  (cd hack/kubectl && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" -o "$tmp/kubectl" .) >&2
  rm -rf "$out"; mv "$tmp" "$out"
  echo "$out"; exit 0
fi
kwok=v0.8.0
# the key names what makes the build (not this whole script, whose kubectl part may change alone)
key=$( { echo "kwok $kwok CGO_ENABLED=0 -trimpath -ldflags=-s -w, kustomize/stage copied"; go version; } | sha256sum | cut -c1-16)
out="$root/kwok-$kwok-$key"
if [ -x "$out/kwok" ] && [ -d "$out/stage" ]; then
  echo "$out"; exit 0
fi
echo "fleet tier: building kwok $kwok into $out (cold: about 1.5 min on 2 cores)" >&2
tmp="$out.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
GOBIN="$tmp" CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok" >&2
src=$(go mod download -json "sigs.k8s.io/kwok@$kwok" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp -r "$src/kustomize/stage" "$tmp/stage"
chmod -R u+w "$tmp/stage"
rm -rf "$out"; mv "$tmp" "$out"
echo "$out"
