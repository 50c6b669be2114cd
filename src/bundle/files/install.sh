#!/bin/sh
# install.sh: swaps the patched jars of this okp bundle into an existing Kafka
# installation. This is a modified build of Apache Kafka (see NOTICE); it is not
# an Apache Kafka release.
#
#   sh install.sh [--dry-run] [--ignore-arch] [--accept-local-jars] KAFKA_HOME
#
# Nothing is written before every check has passed:
#   1. KAFKA_HOME is a Kafka installation (bin/kafka-run-class.sh, libs/) of the
#      bundle's release with Scala 2.13: libs/kafka_2.13-RELEASE.jar and
#      libs/kafka-clients-RELEASE.jar are there and no Kafka core or clients jar
#      of another release or Scala version is;
#   2. every jar it replaces is there and is either the Maven Central jar of that
#      release (sha256) or already this bundle's jar; a jar that is neither is
#      refused unless --accept-local-jars (a distribution you built yourself);
#   3. no other okp bundle is installed (roll that one back first), and what is
#      in KAFKA_HOME/.okp-observer/ is what okp writes: a record that reads as
#      okp's record of this bundle (originals: Maven Central's jars, or any with
#      --accept-local-jars), backups that are copies of the jar they back up;
#   4. the machine is the bundle's target (uname -m), unless --ignore-arch: the
#      jars are architecture-independent, the flag only waives the fleet check.
# Then: each original is copied to KAFKA_HOME/.okp-observer/backup/ (outside
# libs/, so never on the classpath) and checked; the record of intent
# .okp-observer/installing is written; each patched jar is copied beside the
# original, checked, and renamed over it (atomic); the record becomes
# .okp-observer/installed. A running broker keeps the jars it opened: the new
# ones take effect on its next (rolling) restart.
#
# Idempotent: a second run finds every jar in place and changes nothing; an
# interrupted run is completed by running it again. Roll back with
# KAFKA_HOME/.okp-observer/rollback.sh (or this bundle's rollback.sh).
#
# Exit status: 0 installed or already installed; 2 refused (nothing changed);
# 3 a step failed (see the message; run again, or roll back).
set -eu
SCRIPT=okp-install

# ---- written by okp {{OKP_VERSION}} for this bundle ----
BUNDLE='{{NAME}}'
RELEASE='{{RELEASE}}'
MODE='{{MODE}}'
TARGET='{{TARGET}}'
MACHINES='{{MACHINES}}'
PATCH_SET='{{PATCH_SET}}'
# jar in libs/, sha256 of the Maven Central jar it replaces, sha256 of this bundle's jar
JARS='{{JARS}}'
# ---- end of okp data ----

{{COMMON}}
parse_args "--dry-run --ignore-arch --accept-local-jars" \
  "sh install.sh [--dry-run] [--ignore-arch] [--accept-local-jars] KAFKA_HOME" "$@"

here=$(cd "$(dirname "$0")" && pwd) || fail "cannot find the bundle directory"
home=$(kafka_home "$home")
libs="$home/libs"
state="$home/$STATE_DIR_NAME"

# 1. Kafka of this release, Scala 2.13.
if [ ! -f "$libs/kafka_2.13-$RELEASE.jar" ] || [ ! -f "$libs/kafka-clients-$RELEASE.jar" ]; then
  found=''
  for f in "$libs"/kafka_2.1*-*.jar "$libs"/kafka-clients-*.jar; do
    [ -e "$f" ] && found="$found $(basename "$f")"
  done
  refuse "$home is not Kafka $RELEASE for Scala 2.13: libs/ lacks kafka_2.13-$RELEASE.jar or kafka-clients-$RELEASE.jar (it has:${found:- neither})"
fi
for f in "$libs"/kafka_2.1*-*.jar "$libs"/kafka-clients-*.jar; do
  [ -e "$f" ] || continue
  name=$(basename "$f")
  case "$name" in
    "kafka_2.13-$RELEASE.jar"|"kafka_2.13-$RELEASE"-*.jar|"kafka-clients-$RELEASE.jar"|"kafka-clients-$RELEASE"-*.jar) ;;
    *) refuse "libs/$name is not Kafka $RELEASE for Scala 2.13: this installation mixes releases or Scala versions" ;;
  esac
done

# 2 and 3. No other bundle; nothing in $state okp did not write: a record must
# read as okp's record of this bundle, a backup must be a copy of what it backs
# up (the jar in libs/ before an install replaced it, or the original the
# record names); each jar is upstream, an accepted local jar, or already ours.
for d in "$state" "$state/backup"; do
  if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then
    refuse "$d is not a directory; okp did not make it: inspect and remove it"
  fi
done
find_record
recorded=''
if [ -n "$record" ]; then
  other=$(sed -n 's/^bundle=//p' "$record")
  other_ps=$(sed -n 's/^patch_set=//p' "$record")
  if [ "$other" != "$BUNDLE" ] || [ "$other_ps" != "$PATCH_SET" ]; then
    refuse "$home has okp bundle $other (patch set $other_ps) installed; roll it back first: okp rollback --kafka-home $home (or sh rollback.sh $home)"
  fi
  why=$(check_record "$record") ||
    refuse "$record is not an install record okp wrote ($why); inspect $state by hand"
  recorded=$(sed -n 's/^jar=//p' "$record")
  [ "$(printf '%s\n' "$recorded" | awk 'NF { n++ } END { print n }')" = "$(printf '%s\n' "$JARS" | awk 'NF { n++ } END { print n }')" ] ||
    refuse "$record names other jars than this bundle replaces; okp did not write it for this bundle"
fi
if [ -d "$state/backup" ]; then
  for f in "$state"/backup/* "$state"/backup/.[!.]*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    name=$(basename "$f")
    case "$name" in .okp-tmp.*) continue ;; esac
    printf '%s\n' "$JARS" | awk -v j="$name" '$1 == j { found = 1 } END { exit !found }' ||
      refuse "$f is not the backup of a jar this bundle replaces; okp did not write it: inspect and remove it"
  done
fi
todo=''
while read -r jar upstream patched; do
  [ -n "$jar" ] || continue
  [ -f "$libs/$jar" ] || refuse "libs/$jar is missing: this bundle replaces it"
  have=$(sha256_of "$libs/$jar")
  backup=''
  if [ -L "$state/backup/$jar" ] || { [ -e "$state/backup/$jar" ] && [ ! -f "$state/backup/$jar" ]; }; then
    refuse "$state/backup/$jar is not a regular file; okp did not write it: inspect and remove it"
  fi
  [ -f "$state/backup/$jar" ] && backup=$(sha256_of "$state/backup/$jar")
  if [ -n "$record" ]; then
    line=$(printf '%s\n' "$recorded" | awk -v j="$jar" '$1 == j')
    [ -n "$line" ] || refuse "$record does not name libs/$jar; okp did not write it for this bundle"
    original=$(printf '%s\n' "$line" | awk '{ print $2 }')
    [ "$(printf '%s\n' "$line" | awk '{ print $3 }')" = "$patched" ] ||
      refuse "$record records another patched jar for libs/$jar than this bundle's; okp did not write it for this bundle"
    if [ "$original" != "$upstream" ] && ! has_opt --accept-local-jars; then
      refuse "$record names an original libs/$jar (sha256 $original) that is not the Maven Central jar ($upstream); if this installation's jars are your own build of $RELEASE, pass --accept-local-jars"
    fi
    if [ -n "$backup" ] && [ "$backup" != "$original" ]; then
      refuse "$state/backup/$jar (sha256 $backup) is not the original $record names ($original); okp did not write it: roll back by hand"
    fi
    if [ "$have" = "$patched" ]; then
      [ -n "$backup" ] ||
        refuse "libs/$jar is already this bundle's jar but its original is not in $state/backup/: a rollback would be impossible; put the original jar back first"
    elif [ "$have" = "$original" ]; then
      todo="$todo $jar"
    else
      refuse "libs/$jar (sha256 $have) changed after this bundle was installed; roll back (rollback --force) or restore it"
    fi
  else
    # No record: install writes it before replacing any jar, so libs/ holds the originals.
    if [ "$have" = "$patched" ]; then
      refuse "libs/$jar is already this bundle's jar but $state holds no install record: okp cannot know its original; put the original jar back first"
    elif [ "$have" = "$upstream" ]; then
      todo="$todo $jar"
    elif has_opt --accept-local-jars; then
      say "libs/$jar is not the Maven Central jar (sha256 $have, Maven Central $upstream); accepted (--accept-local-jars): it is backed up as is"
      todo="$todo $jar"
    else
      refuse "libs/$jar has sha256 $have, neither the Maven Central jar of Kafka $RELEASE ($upstream) nor this bundle's ($patched); if this installation's jars are your own build of $RELEASE, pass --accept-local-jars"
    fi
    if [ -n "$backup" ] && [ "$backup" != "$have" ]; then
      refuse "$state/backup/$jar (sha256 $backup) is not a copy of libs/$jar ($have) and no install record names it; okp did not write it: inspect and remove it"
    fi
  fi
done <<JARS_EOF
$JARS
JARS_EOF

# 4. The fleet's architecture.
machine=$(uname -m 2>/dev/null || echo unknown)
case " $MACHINES " in
  *" $machine "*) ;;
  *)
    has_opt --ignore-arch ||
      refuse "this machine is $machine but the bundle is for $TARGET; use the bundle for this machine, or pass --ignore-arch"
    say "this machine is $machine, the bundle is for $TARGET; continuing (--ignore-arch; the jars are architecture-independent)" ;;
esac

if [ -z "$todo" ] && [ -f "$state/installed" ]; then
  say "$BUNDLE is already installed in $home; nothing to do"
  exit 0
fi
if has_opt --dry-run; then
  say "dry run: would install $BUNDLE into $home, replacing:${todo:- nothing (every jar is in place; would record the installation)}"
  exit 0
fi

# Write: backups, the record of intent, the jars, then the commit record.
mkdir -p "$state/backup" || fail "cannot create $state/backup"
remove_leftovers
for jar in $todo; do
  [ -f "$state/backup/$jar" ] || copy_checked "$libs/$jar" "$state/backup/$jar" "$(sha256_of "$libs/$jar")"
done
copy_checked "$here/rollback.sh" "$state/rollback.sh" "$(sha256_of "$here/rollback.sh")"
copy_checked "$here/MANIFEST.json" "$state/MANIFEST.json" "$(sha256_of "$here/MANIFEST.json")"
if [ ! -f "$state/installing" ] && [ ! -f "$state/installed" ]; then
  {
    echo "bundle=$BUNDLE"
    echo "release=$RELEASE"
    echo "mode=$MODE"
    echo "target=$TARGET"
    echo "patch_set=$PATCH_SET"
    while read -r jar upstream patched; do
      [ -n "$jar" ] || continue
      echo "jar=$jar $(sha256_of "$state/backup/$jar") $patched"
    done <<JARS_EOF
$JARS
JARS_EOF
  } >"$state/.okp-tmp.installing" || fail "cannot write $state/.okp-tmp.installing"
  mv -f "$state/.okp-tmp.installing" "$state/installing" || fail "cannot write $state/installing"
fi
for jar in $todo; do
  patched=$(printf '%s\n' "$JARS" | awk -v j="$jar" '$1 == j { print $3 }')
  copy_checked "$here/libs/$jar" "$libs/$jar" "$patched"
  say "replaced libs/$jar"
done
if [ -f "$state/installing" ]; then
  mv -f "$state/installing" "$state/installed" || fail "cannot write $state/installed"
fi
say "installed $BUNDLE into $home (originals in $state/backup/); restart the broker to load it; roll back with: sh $state/rollback.sh $home"
