#!/usr/bin/env bash
# Builds containerd v2.4.2 (containerd, containerd-shim-runc-v2, ctr) from the Go module proxy for
# the lab's second runtime, and caches it outside the repository, keyed by the version, this
# script and the Go version. Prints the cache directory (binaries under usr/bin, so the directory
# doubles as the host root pullpath's version detection reads).
# A cold build (module download included) took 3 min 8 s on 2 cores while the Kubernetes build ran
# beside it and shared its Go build cache (2026-12-03, go1.26.8); shared/notes measured about 11 min
# with nothing cached. A cache hit takes no time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${PULLPATH_CACHE:-/var/cache/pullpath}
v=v2.4.2
mod=github.com/containerd/containerd/v2
ld="-s -w -X $mod/version.Version=$v -X $mod/version.Revision=module-proxy"
# no_btrfs etc.: the lab needs only the overlayfs/native snapshotters, and CGO stays off.
tags="no_btrfs no_devmapper no_zfs no_aufs"
key=$( { cat scripts/containerd2.sh; go version; echo "$ld $tags"; } | sha256sum | cut -c1-16)
out="$root/containerd-$v-$key"
if [ -x "$out/usr/bin/containerd" ] && [ -x "$out/usr/bin/containerd-shim-runc-v2" ] && [ -x "$out/usr/bin/ctr" ]; then
  echo "$out"; exit 0
fi
echo "lab: building containerd $v from the module proxy into $out (cold: about 3 min on 2 cores)" >&2
tmp="$out.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp/usr/bin"
# go install pkg@version builds the module with its own go.mod (no replace directives in v2.4.2).
GOBIN="$tmp/usr/bin" CGO_ENABLED=0 go install -trimpath -tags "$tags" -ldflags "$ld" \
  "$mod/cmd/containerd@$v" "$mod/cmd/containerd-shim-runc-v2@$v" "$mod/cmd/ctr@$v" >&2
rm -rf "$out"; mv "$tmp" "$out"
echo "$out"
