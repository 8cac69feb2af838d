#!/usr/bin/env bash
# Installs and builds everything the project needs on Debian 12, as root:
# apt packages, DPDK's internal pipeline headers (Debian source package of the
# installed DPDK), the Python venvs, and libbsw. Idempotent: a second run only
# checks. Used by `make setup`, hence by the README's commands and CI.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '[setup] %s\n' "$*"; }

[ "$(id -u)" = 0 ] || { echo "setup must run as root (apt, namespaces, veth)" >&2; exit 1; }

# freeradius(-utils): the real RADIUS server and radclient the AAA tests run;
# xl2tpd, l2tpns: third-party L2TP peers for the interop tests.
# python3-dev: ptf's netifaces has no wheel for Python 3.11 and is compiled;
# procps (pgrep, sysctl) and curl: the tests and the lab's how-to use them.
APT_PKGS=(dpdk libdpdk-dev dpdk-doc iputils-ping pkg-config gcc make libpcap-dev iproute2 ethtool tcpdump
          python3 python3-venv python3-pip python3-dev xz-utils ca-certificates freeradius freeradius-utils
          xl2tpd ppp l2tpns procps curl)
# Go for the subscriber emulator (emulator/, stdlib only, Go >= 1.19)
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || APT_PKGS+=(golang-go)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt: installing ${missing[*]}"
  apt-get update -qq
  # freeradius, xl2tpd and l2tpns ship services; the tests start their own
  # copies in namespaces, so none may start (and bind its port) on the host.
  policy_rc=/usr/sbin/policy-rc.d; own_policy=0
  if [ ! -e "$policy_rc" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy_rc"; chmod +x "$policy_rc"; own_policy=1
    # a failed install must not leave every service on the machine unable to start
    trap 'rm -f "$policy_rc"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  if [ "$own_policy" = 1 ]; then rm -f "$policy_rc"; trap - EXIT; fi
fi

# DPDK's generated pipeline C needs rte_swx_pipeline_internal.h and
# rte_swx_pipeline_spec.h, which only the source package has: fetch the
# source of exactly the installed version.
DPDK_VER=$(dpkg-query -W -f='${Version}' libdpdk-dev)
SRC_DIR=targets/dpdk/build/dpdk-src
if [ ! -f "$SRC_DIR/lib/pipeline/rte_swx_pipeline_internal.h" ] || [ "$(cat "$SRC_DIR/.version" 2>/dev/null)" != "$DPDK_VER" ]; then
  log "DPDK $DPDK_VER: fetching its source package for the pipeline headers"
  if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    cat > /etc/apt/sources.list.d/bng-deb-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
  fi
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get source --download-only -qq "dpdk=$DPDK_VER" >"$tmp/apt-source.log" 2>&1); then
    cat "$tmp/apt-source.log" >&2
    echo "setup: apt-get source dpdk=$DPDK_VER failed (above). It needs a deb-src entry for a" \
         "mirror that still has this version; setup adds one for deb.debian.org when none exists." >&2
    exit 1
  fi
  orig=$(ls "$tmp"/dpdk_*.orig.tar.* | head -1)
  rm -rf "$SRC_DIR" && mkdir -p "$SRC_DIR"
  tar -xf "$orig" -C "$SRC_DIR" --strip-components=1 --wildcards '*/lib/pipeline/*' '*/VERSION'
  echo "$DPDK_VER" > "$SRC_DIR/.version"
  rm -rf "$tmp"
fi

log "building libbsw"
make -s -C targets/dpdk

log "building subemu (PPPoE subscriber emulator)"
make -s -C emulator

if [ ! -x .venv/bin/python ]; then
  log "python venv .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import bng_switch, bng_lab, bng_controller.aaa, p4.v1.p4runtime_pb2, grpc, scapy, pytest, pyrad, Crypto, prometheus_client, orjson, hypothesis, atheris, matplotlib" 2>/dev/null; then
  log "pip: project and test dependencies"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e ".[test,bench]"
fi
.venv/bin/python scripts/modernize_p4runtime_pb2.py >/dev/null

# p4runtime-shell pins protobuf < 3.21: it gets its own venv, as users run it.
if ! .venv-shell/bin/python -c "import p4runtime_sh.shell" 2>/dev/null; then
  log "python venv .venv-shell (p4runtime-shell)"
  python3 -m venv .venv-shell
  .venv-shell/bin/pip install -q p4runtime-shell==0.0.6
fi
log "ready"
