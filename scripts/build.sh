#!/usr/bin/env bash
# Static release builds: CGO_ENABLED=0, -trimpath, the version and build date in the ldflags (the
# commit comes from the Go build info), one archive per platform with pullpath, kubectl-pullpath
# (the kubectl plugin name), the probe-only linux builds verify ships to nodes, LICENSE and README.md, their sha256 sums, and the krew manifest with
# the version and the sums filled in.
#
#   scripts/build.sh                    # every platform below
#   scripts/build.sh linux/amd64        # only these
#   VERSION=v0.2.0 DIST=/tmp/out scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."

platforms=("$@")
if [ ${#platforms[@]} -eq 0 ]; then
  platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
fi
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
dist=${DIST:-dist}
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# the Go build info stamps vcs.revision itself, except in a git worktree (.git is a file there)
commit=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$commit" ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then commit="$commit-dirty"; fi
pkg=github.com/pullpath/pullpath/internal/cli
ldflags="-s -w -X $pkg.Version=$version -X $pkg.BuildDate=$date -X $pkg.Commit=$commit"

# sha256sum on Linux, shasum on macOS
if command -v sha256sum >/dev/null 2>&1; then sha=(sha256sum); else sha=(shasum -a 256); fi

# every build embeds internal/probebin, the probe that talks to hostile registries on every node:
# a release must carry exactly those bytes, built by this toolchain (a Go security release
# rebuilds it first: scripts/probebin.sh)
go run ./internal/probebin/gen -verify

mkdir -p "$dist"
sums="$dist/sha256sums.txt"
: >"$sums"
# the probe-only static builds (no client-go) that `pullpath verify` ships to linux nodes in
# ConfigMaps; every archive carries them, so verify works from any laptop
mkdir -p "$dist/probe"
for arch in amd64 arm64; do
  echo "build: probe-only linux/$arch" >&2
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -tags probeonly -buildvcs=auto -trimpath -ldflags "$ldflags" -o "$dist/probe/pullpath-probe-linux-$arch" ./cmd/pullpath
done
for p in "${platforms[@]}"; do
  os=${p%/*}; arch=${p#*/}
  ext=""; [ "$os" = windows ] && ext=.exe
  name="pullpath_${version}_${os}_${arch}"
  dir="$dist/$name"
  rm -rf "$dir"; mkdir -p "$dir"
  echo "build: $os/$arch" >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -buildvcs=auto -trimpath -ldflags "$ldflags" -o "$dir/pullpath$ext" ./cmd/pullpath
  # kubectl finds plugins by name: a copy, not a symlink, so the archive works on Windows too
  cp "$dir/pullpath$ext" "$dir/kubectl-pullpath$ext"
  cp LICENSE README.md "$dist"/probe/pullpath-probe-linux-* "$dir/"
  tar -C "$dir" -czf "$dist/$name.tar.gz" .
  (cd "$dist" && "${sha[@]}" "$name.tar.gz") >>"$sums"
done

# the krew manifest with this version's URLs and sums (the checked-in one has placeholders)
manifest="$dist/pullpath.yaml"
sed "s/v0\.0\.0-VERSION/$version/g" deploy/krew/pullpath.yaml >"$manifest"
while read -r sum file; do
  plat=${file#pullpath_"${version}"_}; plat=${plat%.tar.gz}   # os_arch
  key=$(echo "SHA256_${plat}" | tr '[:lower:]' '[:upper:]')
  sed "s/$key/$sum/" "$manifest" >"$manifest.tmp" && mv "$manifest.tmp" "$manifest"   # no sed -i: BSD sed differs
done <"$sums"

echo "sha256 (also in $sums; krew manifest: $manifest):"
cat "$sums"
