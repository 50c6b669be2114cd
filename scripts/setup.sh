#!/usr/bin/env bash
# Installs what okp and its tests need on a fresh Debian machine: Maven (okp
# fetches Kafka releases from Maven Central through it), a JDK, git, minisign,
# gnupg, shellcheck and dash (the bundle tests' independent checkers), and the
# Rust toolchain's presence is checked. Idempotent; does nothing when all is there.
set -euo pipefail

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
# Independent checkers of okp's bundles (tests/bundle.rs): signatures, gpg, the shell scripts.
command -v minisign >/dev/null 2>&1 || need+=(minisign)
command -v gpg >/dev/null 2>&1 || need+=(gnupg)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v dash >/dev/null 2>&1 || need+=(dash)
# unzip lists and extracts jar entries in tests/build.rs, independently of okp.
command -v unzip >/dev/null 2>&1 || need+=(unzip)
if ((${#need[@]})); then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo is missing; install Rust (rustup or apt-get install cargo)" >&2; exit 2; }
echo "setup: ok ($(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'); $(javac -version 2>&1); $(cargo --version))" >&2
