#!/usr/bin/env bash
# Installs everything nandrig needs on a fresh Debian bookworm machine: system
# packages through apt (when missing, as root) and the Python package with its
# test extras in a local .venv. Safe to re-run: it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# gcc: tests compile the generated C headers and the firmware natively;
# gcc-riscv64-unknown-elf, picolibc: the firmware for the rig's rv32im soft-core;
# verilator and the libraries of LiteX's simulator: the RTL rig; openfpgaloader: loading the ULX3S;
# chromium and its driver: the report is looked at in a real browser by a test;
# postgresql: the shared store's tests start a private server of their own (Debian's server binaries).
APT_PACKAGES=(gcc make gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf python3-venv
              verilator libevent-dev libjson-c-dev zlib1g-dev openfpgaloader chromium chromium-driver postgresql)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# python3-venv is only needed when the interpreter cannot make a venv by itself
if python3 -m venv --help >/dev/null 2>&1; then
    missing=("${missing[@]/python3-venv}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: need root to install: ${missing[*]}" >&2
        exit 1
    fi
    echo "setup: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

stamp=.venv/.nandrig-setup
# the editable install maps each package folder: re-install when one appears or moves
want=$( (cat pyproject.toml setup.py; find . -path ./.venv -prune -o -path ./build -prune -o -name __init__.py -print | sort) | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing nandrig into .venv"
    # quiet on success; on failure show pip's whole story
    if ! log=$(.venv/bin/python -m pip install -q --upgrade pip 2>&1 && .venv/bin/python -m pip install -q -e ".[test]" 2>&1); then
        echo "$log" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
