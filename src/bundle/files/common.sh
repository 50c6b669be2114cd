STATE_DIR_NAME=.okp-observer

say() { printf '%s: %s\n' "$SCRIPT" "$*" >&2; }
refuse() { say "refused: $*"; say "nothing was changed"; exit 2; }
fail() { say "failed: $*"; exit 3; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# parse_args "ALLOWED OPTIONS" "USAGE" ARGS...: sets $opts (the allowed options
# given, space-separated) and $home (the one operand); refuses anything else.
parse_args() {
  allowed=$1
  usage_line=$2
  shift 2
  opts=' '
  home=''
  while [ $# -gt 0 ]; do
    case "$1" in
      -h|--help) usage; exit 0 ;;
      -*)
        case " $allowed " in
          *" $1 "*) opts="$opts$1 " ;;
          *) refuse "unknown option $1 (see --help)" ;;
        esac ;;
      *) [ -z "$home" ] || refuse "one KAFKA_HOME only (got $home and $1)"; home=$1 ;;
    esac
    shift
  done
  [ -n "$home" ] || refuse "usage: $usage_line"
}

# has_opt OPTION: whether parse_args saw OPTION.
has_opt() {
  case "$opts" in
    *" $1 "*) return 0 ;;
    *) return 1 ;;
  esac
}

sha256_of() {
  [ -f "$1" ] || fail "$1 is missing"
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum <"$1" | awk '{print $1}'
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 <"$1" | awk '{print $1}'
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 -r <"$1" | awk '{print $1}'
  else
    fail "none of sha256sum, shasum or openssl is installed"
  fi
}

# copy_checked FROM TO SHA256: copies FROM to a temporary file beside TO (same
# file system), checks the copy's sha256, then renames it over TO (atomic).
copy_checked() {
  tmp="$(dirname "$2")/.okp-tmp.$(basename "$2")"
  rm -f "$tmp"
  cp -p "$1" "$tmp" || fail "cannot copy $1 to $tmp"
  got=$(sha256_of "$tmp")
  if [ "$got" != "$3" ]; then
    rm -f "$tmp"
    fail "the copy of $1 has sha256 $got, expected $3"
  fi
  mv -f "$tmp" "$2" || { rm -f "$tmp"; fail "cannot rename $tmp to $2"; }
}

# remove_leftovers: temporary files of an interrupted run (names only okp uses).
remove_leftovers() {
  rm -f "$libs"/.okp-tmp.* "$state"/.okp-tmp.* "$state"/backup/.okp-tmp.*
}

# kafka_home DIR: the absolute path of DIR, which must look like a Kafka installation.
kafka_home() {
  [ -d "$1" ] || refuse "$1 is not a directory"
  if [ ! -f "$1/bin/kafka-run-class.sh" ] || [ ! -d "$1/libs" ]; then
    refuse "$1 is not a Kafka installation (no bin/kafka-run-class.sh or libs/)"
  fi
  (cd "$1" && pwd) || fail "cannot enter $1"
}
