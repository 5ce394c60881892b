#!/usr/bin/env bash
# Builds the loader (internal/loader/loader.c) reproducibly: no libc, static, stripped, no build id,
# no compiler ident, fixed flags and locale. The binaries are committed and embedded; the loader
# test rebuilds them with this script and compares the bytes.
#
#   scripts/loader.sh                 # into internal/loader
#   scripts/loader.sh DIR             # into DIR (the test uses a temp dir)
#
# amd64 needs gcc on x86_64 (or x86_64-linux-gnu-gcc); arm64 needs aarch64-linux-gnu-gcc (Debian:
# gcc-aarch64-linux-gnu) or gcc on aarch64. A missing compiler skips that architecture with one
# line. DIR/toolchain.txt records the compiler and linker of each binary: the bytes depend on them.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
out=${1:-internal/loader}
mkdir -p "$out"
out=$(cd "$out" && pwd)

cflags=(-Os -static -nostdlib -ffreestanding -fno-stack-protector -fno-pie -no-pie
  -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-ident -fcf-protection=none
  -ffunction-sections -fdata-sections -Wall -Wextra -Werror -s
  -Wl,--gc-sections -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro
  -Wl,-z,noseparate-code -Wl,-z,max-page-size=4096)

compiler() { # arch → compiler command, or nothing
  local arch=$1 host
  host=$(uname -m)
  case $arch in
    amd64) if [ "$host" = x86_64 ] && command -v gcc >/dev/null; then echo gcc; return; fi
      command -v x86_64-linux-gnu-gcc >/dev/null && echo x86_64-linux-gnu-gcc ;;
    arm64) if [ "$host" = aarch64 ] && command -v gcc >/dev/null; then echo gcc; return; fi
      command -v aarch64-linux-gnu-gcc >/dev/null && echo aarch64-linux-gnu-gcc ;;
  esac
  return 0
}

: >"$out/toolchain.txt.new"
built=0
for arch in amd64 arm64; do
  cc=$(compiler "$arch")
  if [ -z "$cc" ]; then
    echo "loader: no compiler for linux/$arch, skipped" >&2
    continue
  fi
  # compiled from inside the source directory, so no absolute path can reach the object
  (cd internal/loader && "$cc" "${cflags[@]}" -o "$out/loader-linux-$arch.tmp" loader.c)
  mv "$out/loader-linux-$arch.tmp" "$out/loader-linux-$arch"
  ld=$("$cc" -print-prog-name=ld)
  printf '%s: %s; %s\n' "$arch" "$("$cc" --version | head -1)" "$("$ld" --version | head -1)" >>"$out/toolchain.txt.new"
  echo "loader: linux/$arch $(wc -c <"$out/loader-linux-$arch") bytes ($cc)" >&2
  built=$((built + 1))
done
mv "$out/toolchain.txt.new" "$out/toolchain.txt"
[ "$built" -gt 0 ] || { echo "loader: no compiler found" >&2; exit 1; }
