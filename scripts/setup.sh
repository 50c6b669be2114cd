#!/usr/bin/env bash
# Installs what okp and its tests need on a fresh Debian machine: Maven (okp
# fetches Kafka releases from Maven Central through it), a JDK, git, and the
# Rust toolchain's presence is checked. Idempotent; does nothing when all is there.
set -euo pipefail

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
if ((${#need[@]})); then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo is missing; install Rust (rustup or apt-get install cargo)" >&2; exit 2; }
echo "setup: ok ($(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'); $(javac -version 2>&1); $(cargo --version))" >&2
