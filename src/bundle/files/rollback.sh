#!/bin/sh
# rollback.sh: puts back the original jars that an okp bundle's install.sh
# replaced in a Kafka installation, from KAFKA_HOME/.okp-observer/backup/, and
# then removes KAFKA_HOME/.okp-observer/. Needs nothing from the bundle: install
# keeps a copy of this script in KAFKA_HOME/.okp-observer/rollback.sh.
#
#   sh rollback.sh [--dry-run] [--force] KAFKA_HOME
#
# Before writing anything it checks that the install record reads as okp's
# (bundle, release, mode, target, patch set, one line per replaced jar), that
# every backup is intact (the sha256 recorded at install) and that every jar
# in libs/ is still the bundle's jar or already the original; a jar that
# changed since install (an upgrade, a manual edit) is refused unless --force,
# which overwrites it with the original. Without a record, a backup is deleted
# only when it is the same as the jar in libs/.
# Each jar is restored by copy beside, check, rename (atomic). A running
# broker keeps the jars it opened: restart it to load the originals.
#
# Idempotent: with nothing installed it says so and exits 0; an interrupted run
# is completed by running it again.
#
# Exit status: 0 rolled back or nothing to roll back; 2 refused (nothing
# changed); 3 a step failed (see the message; run again).
set -eu
SCRIPT=okp-rollback

{{COMMON}}
parse_args "--dry-run --force" "sh rollback.sh [--dry-run] [--force] KAFKA_HOME" "$@"

home=$(kafka_home "$home")
libs="$home/libs"
state="$home/$STATE_DIR_NAME"

find_record
if [ -z "$record" ]; then
  if [ ! -e "$state" ]; then
    say "no okp bundle is installed in $home; nothing to roll back"
    exit 0
  fi
  # Install writes its record before it replaces any jar, so without one no jar
  # was replaced: what is here are backups and copies of an interrupted install
  # (or the empty directories of a rollback interrupted at its very end). Each
  # backup must then be the same as the jar it backs up, or it is all that is
  # left of an original (a record removed by hand): it is never deleted.
  for b in "$state"/backup/*.jar; do
    [ -e "$b" ] || continue
    jar=$(basename "$b")
    if [ ! -f "$libs/$jar" ] || [ "$(sha256_of "$libs/$jar")" != "$(sha256_of "$b")" ]; then
      refuse "$state holds no install record, yet $b differs from libs/$jar: it may be the only copy of an original; restore it by hand"
    fi
  done
  if has_opt --dry-run; then
    say "dry run: would remove $state, left by an install that never replaced a jar"
    exit 0
  fi
  remove_leftovers
  rm -f "$state"/backup/*.jar "$state/rollback.sh" "$state/MANIFEST.json"
  rmdir "$state/backup" 2>/dev/null || true
  rmdir "$state" 2>/dev/null || fail "$state holds files okp did not write; inspect it by hand"
  say "removed $state, left by an install that never replaced a jar; nothing else to roll back"
  exit 0
fi
why=$(check_record "$record") ||
  refuse "$record is not an install record okp wrote ($why); inspect $state and roll back by hand"
bundle=$(sed -n 's/^bundle=//p' "$record")
jars=$(sed -n 's/^jar=//p' "$record")

todo=''
while read -r jar original patched; do
  [ -n "$jar" ] || continue
  have=$(sha256_of "$libs/$jar")
  [ "$have" = "$original" ] && continue
  [ -f "$state/backup/$jar" ] ||
    refuse "libs/$jar is not the original and its backup $state/backup/$jar is missing: restore the backup, or put the original jar in libs/ by hand"
  backup=$(sha256_of "$state/backup/$jar")
  [ "$backup" = "$original" ] ||
    refuse "the backup of $jar is damaged (sha256 $backup, recorded $original)"
  if [ "$have" != "$patched" ]; then
    has_opt --force ||
      refuse "libs/$jar changed after $bundle was installed (sha256 $have); pass --force to overwrite it with the original"
    say "libs/$jar changed after install (sha256 $have); overwriting it with the original (--force)"
  fi
  todo="$todo $jar"
done <<JARS_EOF
$jars
JARS_EOF

if has_opt --dry-run; then
  say "dry run: would roll $bundle back in $home, restoring:${todo:- nothing (every jar is already the original)}"
  exit 0
fi

for jar in $todo; do
  original=$(printf '%s\n' "$jars" | awk -v j="$jar" '$1 == j { print $2 }')
  copy_checked "$state/backup/$jar" "$libs/$jar" "$original"
  say "restored libs/$jar"
done
# Every jar is the original now: leftovers, the backups, then the record, then the directory.
remove_leftovers
while read -r jar original patched; do
  [ -n "$jar" ] || continue
  rm -f "$state/backup/$jar"
done <<JARS_EOF
$jars
JARS_EOF
rm -f "$state/MANIFEST.json" "$state/rollback.sh"
rm -f "$state/installing" "$state/installed"
rmdir "$state/backup" 2>/dev/null || true
rmdir "$state" || fail "$state holds files okp did not write; the jars are restored, remove it by hand"
say "rolled $bundle back in $home; restart the broker to load the original jars"
