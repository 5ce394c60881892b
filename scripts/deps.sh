#!/usr/bin/env bash
# What the test tiers need, installed when missing and run as root: gcc for -race, the lab's Debian
# packages, crictl, Debian's dockerd unpacked into the cache, containerd 2.x (scripts/containerd2.sh,
# 3–11 min cold) and the Kubernetes binaries (scripts/kubebins.sh, 13–30 min cold), both cached
# outside the repository keyed by version. Sourced by scripts/test.sh, which then runs the tests;
# run alone it warms the caches. The fleet tier needs kube-apiserver and etcd from the same build,
# and kwok v0.8.0 (scripts/fleetbins.sh, about 1.5 min cold, cached the same way). PULLPATH_LAB=0,
# PULLPATH_CLUSTER=0 and PULLPATH_FLEET=0 skip one tier's parts.
# The Helm chart's and the kustomize base's tests (internal/watch) need helm v4.3.2
# (scripts/helmbin.sh) and kubectl v1.37.2 (scripts/fleetbins.sh kubectl), both from the module
# proxy and cached the same way; PULLPATH_HELM_TESTS=0 skips them.
# Exports PULLPATH_CONTAINERD2, PULLPATH_KUBEBINS, PULLPATH_KWOK, PULLPATH_HELM and PULLPATH_KUBECTL
# when sourced.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ "$(id -u)" = 0 ] && ! command -v gcc >/dev/null 2>&1; then
  echo "test: installing gcc (the race detector needs a C compiler)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq gcc >/dev/null
fi

if [ "$(id -u)" = 0 ] && [ "${PULLPATH_LAB:-1}" != 0 ]; then
  missing=""
  for b in containerd docker-registry dnsmasq htpasswd nft ip skopeo; do
    command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
  done
  if [ -n "$missing" ]; then
    echo "lab: installing containerd docker-registry dnsmasq apache2-utils nftables skopeo (missing:$missing)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq containerd docker-registry dnsmasq apache2-utils nftables iproute2 skopeo >/dev/null
  fi
  if ! command -v crictl >/dev/null 2>&1; then
    echo "lab: building crictl v1.37.0 (Debian 12 has no cri-tools)"
    GOBIN=/usr/local/bin go install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0
  fi
  # the docker section: Debian's dockerd 20.10, unpacked into the cache, never installed (no
  # service, no bridge, no iptables: the lab starts it by path inside its namespaces)
  dk="${PULLPATH_CACHE:-/var/cache/pullpath}/docker.io"
  if [ ! -x "$dk/root/usr/sbin/dockerd" ]; then
    echo "lab: fetching Debian's docker.io into $dk (unpacked, not installed)"
    export DEBIAN_FRONTEND=noninteractive
    ( mkdir -p "$dk" && cd "$dk" && { apt-get download docker.io >/dev/null 2>&1 || { apt-get update -qq && apt-get download docker.io >/dev/null; }; } &&
      dpkg-deb -x docker.io_*.deb root ) || echo "lab: docker.io could not be fetched; the docker section will skip"
  fi
  if [ -x "$dk/root/usr/sbin/dockerd" ] && ldd "$dk/root/usr/sbin/dockerd" | grep -q "not found"; then
    echo "lab: installing dockerd's libraries (libdevmapper1.02.1 and the others it links)"
    dklibs="libdevmapper1.02.1 libsystemd0 libgcrypt20 liblz4-1 libzstd1 liblzma5 libcap2"
    # shellcheck disable=SC2086
    apt-get install -y -qq $dklibs >/dev/null || { apt-get update -qq && apt-get install -y -qq $dklibs >/dev/null; }
  fi
  # the second runtime: containerd 2.x from the module proxy (3–11 min cold, cached)
  if PULLPATH_CONTAINERD2=$(bash scripts/containerd2.sh); then
    export PULLPATH_CONTAINERD2
  else
    echo "lab: scripts/containerd2.sh failed; the containerd 2.x column will skip"
  fi
fi

if [ "$(id -u)" = 0 ] && [ "${PULLPATH_CLUSTER:-1}" != 0 ]; then
  missing=""
  for b in containerd ctr runc docker-registry dnsmasq htpasswd nsenter unshare ip gcc prometheus promtool; do
    command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
  done
  [ -x /usr/lib/cni/bridge ] || missing="$missing cni-plugins"
  [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || missing="$missing libc6-dev"
  if [ -n "$missing" ]; then
    echo "cluster tier: installing containerd runc containernetworking-plugins docker-registry dnsmasq apache2-utils gcc libc6-dev prometheus (missing:$missing)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # prometheus: watch's metrics are scraped by a real one, and promtool tests its alert rules
    apt-get install -y -qq containerd runc containernetworking-plugins docker-registry dnsmasq apache2-utils gcc libc6-dev util-linux iproute2 prometheus >/dev/null
  fi
  if PULLPATH_KUBEBINS=$(bash scripts/kubebins.sh); then
    export PULLPATH_KUBEBINS
  else
    echo "cluster tier: scripts/kubebins.sh failed; the tier will skip"
  fi
fi

if [ "${PULLPATH_FLEET:-1}" != 0 ]; then
  if [ -z "${PULLPATH_KUBEBINS:-}" ] && [ "$(id -u)" = 0 ]; then
    if PULLPATH_KUBEBINS=$(bash scripts/kubebins.sh); then
      export PULLPATH_KUBEBINS
    else
      echo "fleet tier: scripts/kubebins.sh failed; the tier will skip"
    fi
  fi
  # kwok: nodes and pods without kubelets (the cache must be writable: as root, or PULLPATH_CACHE)
  if PULLPATH_KWOK=$(bash scripts/fleetbins.sh); then
    export PULLPATH_KWOK
  else
    echo "fleet tier: scripts/fleetbins.sh failed (PULLPATH_CACHE writable?); the tier will skip"
  fi
fi

if [ "${PULLPATH_HELM_TESTS:-1}" != 0 ]; then
  # helm lint and helm template of deploy/helm/pullpath-watch, kubectl kustomize of deploy/watch:
  # with these set, the tests run (a test skips only when neither is set nor found)
  if d=$(bash scripts/helmbin.sh); then
    export PULLPATH_HELM="$d/helm"
  else
    echo "chart tests: scripts/helmbin.sh failed (PULLPATH_CACHE writable?); they will skip"
  fi
  if [ -z "${PULLPATH_KUBECTL:-}" ]; then
    if d=$(bash scripts/fleetbins.sh kubectl); then
      export PULLPATH_KUBECTL="$d/kubectl"
    else
      echo "kustomize test: scripts/fleetbins.sh kubectl failed (PULLPATH_CACHE writable?); it will skip"
    fi
  fi
fi
