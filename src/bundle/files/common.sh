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

# find_record: sets $record to the install record in $state (installed, or
# installing when an install was interrupted), empty when there is none.
# Refuses what okp never leaves: $state or its backup/ as a symbolic link or
# anything but a directory (a script never works through a link to elsewhere),
# both records, or one that is not a regular file.
find_record() {
  record=''
  for d in "$state" "$state/backup"; do
    if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then
      refuse "$d is a symbolic link or not a directory; okp makes it a plain directory: inspect it by hand"
    fi
  done
  for r in "$state/installed" "$state/installing"; do
    if [ -L "$r" ] || { [ -e "$r" ] && [ ! -f "$r" ]; }; then
      refuse "$r is not a regular file; okp did not write it: inspect $state by hand"
    fi
    [ -f "$r" ] || continue
    [ -z "$record" ] || refuse "both $state/installed and $state/installing exist; okp never leaves both: inspect $state by hand"
    record=$r
  done
}

# check_record FILE: prints what is wrong and fails unless FILE reads as the
# record okp writes: bundle=, release=, mode=, target=, patch_set= once each
# and one or more `jar=NAME ORIGINAL PATCHED` lines (a plain jar file name, two
# sha256 values), nothing else.
check_record() {
  awk '
    function hex64(s) { return length(s) == 64 && s !~ /[^0-9a-f]/ }
    function bad(why) { print "line " NR ": " why; failed = 1; exit }
    /^(bundle|release|mode|target|patch_set)=/ {
      k = substr($0, 1, index($0, "=") - 1)
      v = substr($0, index($0, "=") + 1)
      if (k in seen) bad("a second " k "=")
      seen[k] = 1
      if (v == "" || v ~ /[^A-Za-z0-9._-]/) bad(k " is not a plain value")
      if (k == "patch_set" && !hex64(v)) bad("patch_set is not a sha256")
      next
    }
    /^jar=/ {
      n = split(substr($0, 5), f, " ")
      if (n != 3 || f[1] !~ /^[A-Za-z0-9][A-Za-z0-9._-]*[.]jar$/ || !hex64(f[2]) || !hex64(f[3]))
        bad("not jar=NAME ORIGINAL-SHA256 PATCHED-SHA256")
      if (f[1] in jars) bad(f[1] " twice")
      jars[f[1]] = 1
      njars++
      next
    }
    { bad("not a line okp writes") }
    END {
      if (failed) exit 1
      split("bundle release mode target patch_set", keys, " ")
      for (i = 1; i <= 5; i++) if (!(keys[i] in seen)) { print "no " keys[i] "= line"; exit 1 }
      if (njars == 0) { print "no jar= line: it names no jar to restore"; exit 1 }
    }' "$1"
}

# kafka_home DIR: the absolute path of DIR, which must look like a Kafka installation.
kafka_home() {
  [ -d "$1" ] || refuse "$1 is not a directory"
  if [ ! -f "$1/bin/kafka-run-class.sh" ] || [ ! -d "$1/libs" ]; then
    refuse "$1 is not a Kafka installation (no bin/kafka-run-class.sh or libs/)"
  fi
  (cd "$1" && pwd) || fail "cannot enter $1"
}
