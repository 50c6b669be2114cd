#!/usr/bin/env bash
# Installs what okp and its tests need on a fresh Debian machine: Maven (okp
# fetches Kafka releases from Maven Central through it), a JDK, git, minisign,
# gnupg, shellcheck and dash (the bundle tests' independent checkers), promtool and
# dashboard-check (the Grafana dashboard's checkers, built with Go),
# check-jsonschema, PyNaCl and cyclonedx-python-lib from PyPI in a virtualenv
# (the schema validator of the ci/ workflow tests, the checkers of a bundle's
# attestations), confluent-kafka (the CREATE scenario's librdkafka client), and
# the Rust toolchain's presence is checked. Idempotent; does
# nothing when all is there.
set -euo pipefail

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
# Independent checkers of okp's bundles (tests/it/bundle.rs): signatures, gpg, the shell scripts.
command -v minisign >/dev/null 2>&1 || need+=(minisign)
command -v gpg >/dev/null 2>&1 || need+=(gnupg)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v dash >/dev/null 2>&1 || need+=(dash)
# openssl and jq check a bundle's DSSE signature as docs/bundles.md shows it (tests/it/bundle.rs).
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v jq >/dev/null 2>&1 || need+=(jq)
# unzip lists and extracts jar entries in tests/it/build.rs, independently of okp.
command -v unzip >/dev/null 2>&1 || need+=(unzip)
# The HOSTS scenario and tests/it/hosts.rs: separate hosts in network namespaces (iproute2), each
# with a hostname of its own (unshare, nsenter: util-linux) and Debian's OpenSSH server.
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
# Debian's prometheus (the server the PROM scenario starts, and promtool: the alert rules' tests,
# every dashboard query parsed, `promtool check metrics` on `okp observers status --format
# prometheus`) and node_exporter (its textfile collector serves that status; docs/observers.md).
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-node-exporter >/dev/null 2>&1 || need+=(prometheus-node-exporter)
# Go builds the dashboard's schema checker (scripts/dashboard-check, below).
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || need+=(golang-go)
# python3 with venv and pip for the PyPI checkers below.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if ((${#need[@]})); then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Python checkers from PyPI, pinned, in one virtualenv where the tests look:
# check-jsonschema validates ci/*.yml against the GitHub workflow schema it ships (SchemaStore's;
# tests/it/ci_workflows.rs); PyNaCl (libsodium's Ed25519) checks a bundle's DSSE signature, and
# cyclonedx-python-lib's strict validator (the CycloneDX 1.6 schema it ships, no network) and
# packageurl-python its SBOM (tests/it/bundle.rs, tests/fixtures/attest/). One pip call, so one
# resolver sees every requirement.
CHECK_JSONSCHEMA_VERSION=0.39.0
CYCLONEDX_VERSION=11.12.0
PYNACL_VERSION=1.6.2
venv="$HOME/.local/share/okp/venv"
if ! "$venv/bin/check-jsonschema" --version 2>/dev/null | grep -q "$CHECK_JSONSCHEMA_VERSION" \
  || ! "$venv/bin/python" -c "import sys, importlib.metadata as m
sys.exit(m.version('cyclonedx-python-lib') != '$CYCLONEDX_VERSION' or m.version('PyNaCl') != '$PYNACL_VERSION')" 2>/dev/null; then
  echo "setup: installing check-jsonschema $CHECK_JSONSCHEMA_VERSION, cyclonedx-python-lib $CYCLONEDX_VERSION, PyNaCl $PYNACL_VERSION into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "check-jsonschema==$CHECK_JSONSCHEMA_VERSION" \
    "cyclonedx-python-lib[json-validation]==$CYCLONEDX_VERSION" "PyNaCl==$PYNACL_VERSION"
fi
# ansible-core for the Ansible role (contrib/ansible/okp_observer) run by HOSTS and its tests:
# pinned, the last release for this Python 3.11 (2.20 and later need 3.12), into the same venv.
ANSIBLE_CORE_VERSION=2.19.14
if ! "$venv/bin/python" -c "import sys, importlib.metadata as m
sys.exit(m.version('ansible-core') != '$ANSIBLE_CORE_VERSION')" 2>/dev/null; then
  echo "setup: installing ansible-core $ANSIBLE_CORE_VERSION into $venv" >&2
  "$venv/bin/pip" install -q "ansible-core==$ANSIBLE_CORE_VERSION"
fi
# confluent-kafka (librdkafka inside its wheel) for the CREATE scenario's non-Java client
# (src/cluster/okp_births.py): pinned, the version of the report it answers (issue 44).
CONFLUENT_KAFKA_VERSION=2.16.1
if ! "$venv/bin/python" -c "import sys, importlib.metadata as m
sys.exit(m.version('confluent-kafka') != '$CONFLUENT_KAFKA_VERSION')" 2>/dev/null; then
  echo "setup: installing confluent-kafka $CONFLUENT_KAFKA_VERSION into $venv" >&2
  "$venv/bin/pip" install -q "confluent-kafka==$CONFLUENT_KAFKA_VERSION"
fi
# ansible-lint in a virtualenv of its own (its dependencies are many and must not move the
# checkers above); the role's lint test is skipped where it did not install.
ANSIBLE_LINT_VERSION=25.12.2
lint_venv="$HOME/.local/share/okp/lint-venv"
if ! "$lint_venv/bin/python" -c "import sys, importlib.metadata as m
sys.exit(m.version('ansible-lint') != '$ANSIBLE_LINT_VERSION')" 2>/dev/null; then
  echo "setup: installing ansible-lint $ANSIBLE_LINT_VERSION into $lint_venv" >&2
  { python3 -m venv "$lint_venv" \
      && "$lint_venv/bin/pip" install -q "ansible-lint==$ANSIBLE_LINT_VERSION" "ansible-core==$ANSIBLE_CORE_VERSION"; } \
    || echo "setup: ansible-lint did not install; the role's lint test will say it is skipped" >&2
fi
# dashboard-check (scripts/dashboard-check): the Grafana Foundation SDK's strict decoder of the
# dashboard model, pinned by that module's go.sum and fetched through the Go module proxy, built
# where tests/it/monitoring.rs looks; rebuilt when its sources change. The SDK needs Go 1.21 or
# later: with an older Go (Debian 12's golang-go is 1.19) the pinned toolchain below is fetched
# as the module the Go module proxy publishes it as (what GOTOOLCHAIN does in Go 1.21 and later;
# checked against the Go checksum database like any module) and builds it instead.
GO_TOOLCHAIN=go1.22.12
go_bin=""
# go_tool NAME SRC PACKAGE: builds PACKAGE (of the module in SRC, pinned by its go.mod and go.sum)
# into ~/.local/share/okp/bin/NAME, again only when SRC's files change.
go_tool() {
  local name=$1 src=$2 pkg=$3
  local bin="$HOME/.local/share/okp/bin/$name"
  local sum
  sum="$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$bin.sum" 2>/dev/null)" = "$sum" ] && [ -x "$bin" ]; then
    return 0
  fi
  if [ -z "$go_bin" ]; then
    go_bin="$(command -v go || echo /usr/local/go/bin/go)"
    local go_minor
    go_minor="$("$go_bin" env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
    if [ "${go_minor:-0}" -lt 21 ]; then
      echo "setup: $("$go_bin" env GOVERSION) is too old for okp's Go tools; fetching $GO_TOOLCHAIN through the Go module proxy" >&2
      local tc_dir
      tc_dir="$(cd / && GOMODCACHE="$HOME/.local/share/okp/go-toolchain" GOFLAGS=-modcacherw "$go_bin" mod download -json \
        "golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.$("$go_bin" env GOOS)-$("$go_bin" env GOARCH)" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
      # Module zips keep no file modes: the toolchain's programs are made executable again.
      chmod u+x "$tc_dir/bin/"* "$tc_dir/pkg/tool/"*/*
      go_bin="$tc_dir/bin/go"
    fi
  fi
  echo "setup: building $name ($(sed -n 's/^require \([^(]\)/\1/p' "$src/go.mod")) into $bin" >&2
  mkdir -p "$(dirname "$bin")"
  (cd "$src" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly "$go_bin" build -trimpath -o "$bin" "$pkg")
  echo "$sum" >"$bin.sum"
}
scripts_dir="$(cd "$(dirname "$0")" && pwd)"
go_tool dashboard-check "$scripts_dir/dashboard-check" .
# toxiproxy-server (scripts/toxiproxy): Shopify's Toxiproxy, the delay of the WAN link between the
# regions of scenario WAN (src/hosts/wan.rs); the kernel's shapers (tc tbf) give its bandwidth.
go_tool toxiproxy-server "$scripts_dir/toxiproxy" github.com/Shopify/toxiproxy/v2/cmd/server
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo is missing; install Rust (rustup or apt-get install cargo)" >&2; exit 2; }
# rustfmt and clippy: .ci/run checks formatting and lints before the tests.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null 2>&1; then
    echo "setup: adding rustfmt and clippy" >&2
    rustup component add rustfmt clippy >&2
  else
    echo "setup: installing rustfmt and clippy" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq rustfmt rust-clippy >/dev/null
  fi
fi
echo "setup: ok ($(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'); $(javac -version 2>&1); $(cargo --version))" >&2
