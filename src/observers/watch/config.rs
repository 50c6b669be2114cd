//! The watchdog's settings: its flags over an optional YAML config file
//! (`--config`, each key a flag's name: `enable`, `bootstrap`, `policy`,
//! `max-lag`, ...), over the defaults, checked once.
//!
//! Rule 1: the watchdog is off unless `--enable` is passed or the config file
//! says `enable: true`. The shipped example config says `enable: false`, and
//! the shipped systemd unit passes no `--enable`, so starting the unit does
//! nothing until an operator has decided to turn it on.
//!
//! Topic policies (`topic-policies:`, a list of `{topic: NAME | prefix: P | regex: R, policy:
//! POLICY}`, or the flags `--topic-policy SELECTOR=POLICY`, which replace the file's list when
//! any is given) are checked here once, each refusal naming the file, line and column of the
//! entry (or the flag): a selector observer.ids would refuse (a pattern outside its language
//! among them), an unknown policy, a second entry for one selector, more than
//! `MAX_TOPIC_POLICIES`.
//!
//! Not here: the nodes and their transport (the command edge resolves them
//! like `promote` does, from the flags or these keys), running (`watch::run`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::decide::{Policy, Rules};
use super::policy::{TopicPolicies, TopicPolicy, MAX_REGEX_POLICIES, MAX_TOPIC_POLICIES};
use crate::error::{Error, Result};
use crate::model::{yaml, Origin};

pub const DEFAULT_INTERVAL_S: u64 = 10;
pub const DEFAULT_COOLDOWN_S: u64 = 300;
pub const DEFAULT_CONFIRM_S: u64 = 5;
pub const DEFAULT_TIMEOUT_S: u64 = 120;
pub const DEFAULT_MAX_LAG: i64 = 0;
pub const DEFAULT_STATE: &str = "/var/lib/okp/observer-watch.json";
pub const DEFAULT_AUDIT_LOG: &str = "/var/log/okp/observer-watch.log";

/// How node files are reached, as a config file or `--transport` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TransportName {
    Local,
    Command,
}

/// The config file, and the flags as given (the same keys: None is not given). A flag wins.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct File {
    pub enable: Option<bool>,
    pub dry_run: Option<bool>,
    pub bootstrap: Option<Vec<String>>,
    pub nodes: Option<PathBuf>,
    pub transport: Option<TransportName>,
    pub read_cmd: Option<String>,
    pub write_cmd: Option<String>,
    pub transport_timeout: Option<u64>,
    pub policy: Option<Policy>,
    pub max_lag: Option<i64>,
    pub interval: Option<u64>,
    pub cooldown: Option<u64>,
    pub confirm_interval: Option<u64>,
    pub timeout: Option<u64>,
    pub state: Option<PathBuf>,
    pub audit_log: Option<PathBuf>,
    /// Policies per topic, most specific first (see `policy::TopicPolicies`); each checked as read.
    #[serde(default, deserialize_with = "topic_policies")]
    pub topic_policies: Option<Vec<TopicPolicy>>,
}

/// One `topic-policies:` entry as written, with where its selector stands.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopicPolicy {
    topic: Option<Spanned<String>>,
    prefix: Option<Spanned<String>>,
    regex: Option<Spanned<String>>,
    policy: Policy,
}

/// One entry, checked as it is read: the parser places a refusal at the entry.
struct Entry(TopicPolicy);

impl<'de> serde::Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Entry, D::Error> {
        let raw = RawTopicPolicy::deserialize(d)?;
        let named: Vec<(&str, Spanned<String>)> = [("topic", raw.topic), ("prefix", raw.prefix), ("regex", raw.regex)]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        let [(kind, value)] = &named[..] else {
            return Err(de::Error::custom(format_args!(
                "a topic policy is {{topic: NAME | prefix: P | regex: R, policy: POLICY}}: one selector, this entry has {}",
                named.len()
            )));
        };
        let at = (value.referenced.line() as usize, value.referenced.column() as usize);
        TopicPolicy::new(&format!("{kind}:{}", value.value), raw.policy, Some(at))
            .map(Entry)
            .map_err(|e| de::Error::custom(format_args!("topic-policies, {kind}: {e}")))
    }
}

/// `topic-policies:`: a list of at most `MAX_TOPIC_POLICIES` entries, `MAX_REGEX_POLICIES` of them
/// regexes (counted as they are read: a file of a million regexes is refused without compiling
/// them all).
fn topic_policies<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Vec<TopicPolicy>>, D::Error> {
    struct List;
    impl<'de> Visitor<'de> for List {
        type Value = Vec<TopicPolicy>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of {topic: NAME | prefix: P | regex: R, policy: POLICY}")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while out.len() < MAX_TOPIC_POLICIES {
                match seq.next_element::<Entry>()? {
                    Some(e) => out.push(e.0),
                    None => return Ok(out),
                }
                if out.iter().filter(|t| t.is_regex()).count() > MAX_REGEX_POLICIES {
                    let last = out.last().map(|t| t.selector.shown()).unwrap_or_default();
                    return Err(de::Error::custom(format_args!(
                        "topic-policies, entry {} ({}): more than {MAX_REGEX_POLICIES} regex topic policies: at most {MAX_REGEX_POLICIES}",
                        out.len(),
                        crate::escape::one_line(&last)
                    )));
                }
            }
            match seq.next_element::<de::IgnoredAny>()? {
                None => Ok(out),
                Some(_) => Err(de::Error::custom(format_args!(
                    "more than {MAX_TOPIC_POLICIES} topic policies: at most {MAX_TOPIC_POLICIES}"
                ))),
            }
        }
    }
    d.deserialize_seq(List).map(Some)
}

/// Reads a config file; a relative path in it is relative to the file's directory.
pub fn load(path: &Path) -> Result<File> {
    let origin = yaml::read(path, yaml::Input::Data)?;
    let mut f = parse(&origin)?;
    let base = path.parent().unwrap_or(Path::new("."));
    for p in [&mut f.nodes, &mut f.state, &mut f.audit_log].into_iter().flatten() {
        if p.is_relative() {
            *p = base.join(&*p);
        }
    }
    Ok(f)
}

/// Parses a config file's text (a file of nothing but comments is an empty config).
pub fn parse(origin: &Origin) -> Result<File> {
    if origin.text.lines().map(str::trim).all(|l| l.is_empty() || l.starts_with('#') || l == "---") {
        return Ok(File::default());
    }
    let f: File = yaml::parse(origin)?;
    if let Some(list) = &f.topic_policies {
        TopicPolicies::new(list).map_err(|(i, e)| {
            let (line, col) = list.get(i).and_then(|t| t.at).unwrap_or((1, 1));
            Error::Manifest { file: origin.name.clone(), line, col, msg: format!("topic-policies: {e}") }
        })?;
    }
    Ok(f)
}

/// The topic policies in force: the flags' when any is given, else the file's; checked as a whole
/// (a second entry for one selector), each refusal naming the flag or the file's line.
fn topic_table(flags: &File, file: Option<(&Path, &File)>) -> Result<TopicPolicies> {
    let given = flags.topic_policies.as_ref().filter(|l| !l.is_empty());
    let list = given.or(file.and_then(|(_, f)| f.topic_policies.as_ref())).cloned().unwrap_or_default();
    TopicPolicies::new(&list).map_err(|(i, e)| match (given, file, list.get(i)) {
        (None, Some((path, _)), Some(TopicPolicy { at: Some((line, col)), .. })) => Error::Manifest {
            file: path.display().to_string(),
            line: *line,
            col: *col,
            msg: format!("topic-policies: {e}"),
        },
        (_, _, Some(t)) => Error::Usage(format!("--topic-policy {}: {e}", crate::escape::one_line(&t.shown()))),
        _ => Error::Usage(format!("--topic-policy: {e}")),
    })
}

/// Everything a run needs, checked.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bootstrap: Vec<String>,
    pub rules: Rules,
    pub interval: Duration,
    pub confirm_interval: Duration,
    pub timeout: Duration,
    pub state: PathBuf,
    pub audit_log: PathBuf,
    pub dry_run: bool,
    pub once: bool,
}

fn seconds(name: &str, v: u64, min: u64, max: u64) -> Result<Duration> {
    if v < min || v > max {
        return Err(Error::Usage(format!("--{name} {v}: expected {min} to {max} seconds")));
    }
    Ok(Duration::from_secs(v))
}

/// Flags over the config file over the defaults; rule 1 first. The nodes and
/// their transport are the command edge's (`nodes`, `transport`, ... unread here).
pub fn resolve(flags: &File, once: bool, file: Option<(&Path, &File)>) -> Result<Settings> {
    let f = file.map(|(_, f)| f.clone()).unwrap_or_default();
    let g = flags.clone();
    if g.enable != Some(true) && f.enable != Some(true) {
        let why = match file {
            Some((p, f)) if f.enable == Some(false) => format!("{} says `enable: false`", p.display()),
            Some((p, _)) => format!("{} has no `enable: true`", p.display()),
            None => "no --enable".to_string(),
        };
        return Err(Error::Usage(format!(
            "the observer watchdog is off unless enabled ({why}): it promotes and demotes brokers unattended. Read OBSERVERS-WATCH.md (docs/observers-watch.md), then pass --enable or set `enable: true` in the config file; --dry-run with it changes nothing"
        )));
    }
    let bootstrap = g.bootstrap.filter(|b| !b.is_empty()).or(f.bootstrap).unwrap_or_default();
    if bootstrap.is_empty() {
        return Err(Error::Usage(
            "no bootstrap servers: pass --bootstrap HOST:PORT or set `bootstrap:` in the config file".into(),
        ));
    }
    let max_lag = g.max_lag.or(f.max_lag).unwrap_or(DEFAULT_MAX_LAG);
    if max_lag < 0 {
        return Err(Error::Usage(format!("--max-lag {max_lag}: expected 0 or more offsets")));
    }
    let interval = seconds("interval", g.interval.or(f.interval).unwrap_or(DEFAULT_INTERVAL_S), 1, 86_400)?;
    let cooldown = seconds("cooldown", g.cooldown.or(f.cooldown).unwrap_or(DEFAULT_COOLDOWN_S), 1, 7 * 86_400)?;
    let confirm_interval =
        seconds("confirm-interval", g.confirm_interval.or(f.confirm_interval).unwrap_or(DEFAULT_CONFIRM_S), 1, 3_600)?;
    let timeout = seconds("timeout", g.timeout.or(f.timeout).unwrap_or(DEFAULT_TIMEOUT_S), 1, 86_400)?;
    let state = g.state.or(f.state).unwrap_or_else(|| DEFAULT_STATE.into());
    let audit_log = g.audit_log.or(f.audit_log).unwrap_or_else(|| DEFAULT_AUDIT_LOG.into());
    if state == audit_log {
        return Err(Error::Usage(format!(
            "--state and --audit-log are both {}: they must be two files",
            state.display()
        )));
    }
    let topics = topic_table(flags, file)?;
    Ok(Settings {
        bootstrap,
        rules: Rules {
            policy: g.policy.or(f.policy).unwrap_or(Policy::UnderMinIsr),
            topics,
            max_lag,
            cooldown_ms: cooldown.as_millis() as i64,
        },
        interval,
        confirm_interval,
        timeout,
        state,
        audit_log,
        dry_run: g.dry_run == Some(true) || f.dry_run == Some(true),
        once,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled() -> File {
        File { enable: Some(true), bootstrap: Some(vec!["b:9092".into()]), ..File::default() }
    }

    #[test]
    fn rule1_off_unless_enabled_by_flag_or_file() {
        let off =
            resolve(&File { bootstrap: Some(vec!["b:9092".into()]), ..File::default() }, false, None).unwrap_err();
        assert!(off.to_string().contains("off unless enabled (no --enable)"), "{off}");
        assert_eq!(off.exit_code(), 2);
        let p = Path::new("/etc/okp/observer-watch.yaml");
        let no = File { enable: Some(false), bootstrap: Some(vec!["b:9092".into()]), ..File::default() };
        assert!(resolve(&File::default(), false, Some((p, &no)))
            .unwrap_err()
            .to_string()
            .contains("says `enable: false`"));
        // Dry-run is no way around it: it too needs the explicit setting.
        let dry = File { dry_run: Some(true), bootstrap: Some(vec!["b:9092".into()]), ..File::default() };
        assert!(resolve(&dry, false, Some((p, &File::default())))
            .unwrap_err()
            .to_string()
            .contains("has no `enable: true`"));
        let yes = File { enable: Some(true), ..no.clone() };
        assert!(resolve(&File::default(), false, Some((p, &yes))).is_ok());
        assert!(
            resolve(&File { enable: Some(true), ..File::default() }, false, Some((p, &no))).is_ok(),
            "the flag is explicit too"
        );
    }

    #[test]
    fn defaults_flags_over_file_and_bad_values() {
        let s = resolve(&enabled(), false, None).unwrap();
        assert_eq!(
            (s.rules.policy, s.rules.max_lag, s.rules.cooldown_ms, s.interval.as_secs(), s.confirm_interval.as_secs()),
            (Policy::UnderMinIsr, 0, 300_000, 10, 5)
        );
        assert!(!s.dry_run && !s.once);
        let f =
            File { interval: Some(30), policy: Some(Policy::UnderReplicated), dry_run: Some(true), ..File::default() };
        let p = Path::new("c.yaml");
        let s = resolve(&File { interval: Some(2), ..enabled() }, false, Some((p, &f))).unwrap();
        assert_eq!((s.interval.as_secs(), s.rules.policy, s.dry_run), (2, Policy::UnderReplicated, true));
        for (g, word) in [
            (File { interval: Some(0), ..enabled() }, "--interval 0: expected 1 to 86400 seconds"),
            (File { confirm_interval: Some(0), ..enabled() }, "--confirm-interval 0"),
            (File { cooldown: Some(0), ..enabled() }, "--cooldown 0"),
            (File { max_lag: Some(-1), ..enabled() }, "--max-lag -1"),
            (File { interval: Some(10_000_000), ..enabled() }, "--interval 10000000"),
            (File { bootstrap: None, ..enabled() }, "no bootstrap servers"),
            (File { state: Some("x".into()), audit_log: Some("x".into()), ..enabled() }, "must be two files"),
        ] {
            let e = resolve(&g, false, None).unwrap_err();
            assert!(e.to_string().contains(word), "{e}");
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn the_config_file_is_checked_where_it_is_wrong() {
        let o = |t: &str| Origin::new("w.yaml", t);
        assert_eq!(parse(&o("# nothing yet\n")).unwrap(), File::default());
        let e = parse(&o("enable: true\npolicy: always\n")).unwrap_err().to_string();
        assert!(e.starts_with("w.yaml:2:") && e.contains("always"), "{e}");
        let e = parse(&o("enable: true\nintervall: 5\n")).unwrap_err().to_string();
        assert!(e.starts_with("w.yaml:2:") && e.contains("intervall"), "{e}");
        let f = parse(&o("enable: true\nbootstrap: [a:1, b:2]\nmax-lag: 5\nconfirm-interval: 3\ntransport: command\n"))
            .unwrap();
        assert_eq!(f.bootstrap, Some(vec!["a:1".to_string(), "b:2".into()]));
        assert_eq!((f.max_lag, f.confirm_interval, f.transport), (Some(5), Some(3), Some(TransportName::Command)));
    }

    #[test]
    fn relative_paths_in_a_config_file_are_relative_to_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("w.yaml");
        std::fs::write(&p, "enable: true\nnodes: n.yaml\nstate: /var/lib/x.json\naudit-log: logs/a.log\n").unwrap();
        let f = load(&p).unwrap();
        assert_eq!(f.nodes, Some(d.path().join("n.yaml")));
        assert_eq!(f.state, Some(PathBuf::from("/var/lib/x.json")));
        assert_eq!(f.audit_log, Some(d.path().join("logs/a.log")));
        assert!(load(&d.path().join("missing.yaml")).unwrap_err().to_string().contains("missing.yaml"));
    }

    #[test]
    fn the_shipped_example_parses_and_is_off() {
        let text = include_str!("../../bundle/files/observer-watch.yaml");
        let f = parse(&Origin::new("observer-watch.yaml", text)).unwrap();
        assert_eq!(f.enable, Some(false));
        assert!(resolve(&File::default(), false, Some((Path::new("observer-watch.yaml"), &f))).is_err());
        let unit = include_str!("../../bundle/files/okp-observer-watch.service");
        let exec: Vec<&str> = unit.lines().filter(|l| l.starts_with("ExecStart=")).collect();
        assert_eq!(exec, ["ExecStart=/usr/local/bin/okp observers watch --config /etc/okp/observer-watch.yaml"]);
        assert!(unit.contains("RestartPreventExitStatus=2"), "not enabled (exit 2) is not restarted");
    }

    #[test]
    fn topic_policies_from_the_file_or_the_flags_most_specific_first() {
        let o = |t: &str| Origin::new("w.yaml", t);
        let f = parse(&o("enable: true\nbootstrap: [b:1]\npolicy: never\ntopic-policies:\n  - {topic: audit, policy: under-replicated}\n  - prefix: ledger\n    policy: under-replicated\n  - {regex: 'tmp-.*', policy: never}\n"))
            .unwrap();
        let list = f.topic_policies.as_ref().unwrap();
        assert_eq!(
            list.iter().map(|t| t.shown()).collect::<Vec<_>>(),
            ["topic:audit=under-replicated", "prefix:ledger=under-replicated", "regex:tmp-.*=never"]
        );
        assert_eq!(list[1].at, Some((6, 13)), "where the selector stands");
        let p = Path::new("w.yaml");
        let s = resolve(&File::default(), false, Some((p, &f))).unwrap();
        let of = |s: &Settings, t: &str| s.rules.policy_for(t);
        assert_eq!(
            (of(&s, "audit"), of(&s, "ledger-eu"), of(&s, "tmp-1"), of(&s, "orders")),
            (Policy::UnderReplicated, Policy::UnderReplicated, Policy::Never, Policy::Never)
        );
        // Flags replace the file's list as a whole.
        let flags = File {
            topic_policies: Some(vec![TopicPolicy::parse_flag("prefix:orders-=under-min-isr").unwrap()]),
            ..File::default()
        };
        let s = resolve(&flags, false, Some((p, &f))).unwrap();
        assert_eq!((of(&s, "orders-1"), of(&s, "audit")), (Policy::UnderMinIsr, Policy::Never));
        // None at all: the cluster's policy for every topic, as before.
        let s = resolve(&enabled(), false, None).unwrap();
        assert!(s.rules.topics.is_empty() && of(&s, "audit") == Policy::UnderMinIsr);
    }

    #[test]
    fn a_malformed_topic_policy_is_refused_naming_the_file_and_the_entry() {
        let o = |t: &str| {
            Origin::new("w.yaml", format!("enable: true\ntopic-policies:\n  - {{topic: audit, policy: never}}\n{t}"))
        };
        for (entry, want) in [
            ("  - {regex: '(', policy: never}\n", "w.yaml:4:5: topic-policies, regex: not a pattern of observer.ids (an empty alternative): ( (at character 2)"),
            ("  - {regex: '(?!tmp).*', policy: never}\n", "w.yaml:4:5: topic-policies, regex: not a pattern of observer.ids ('(?' other than '(?:' (no flags, names or lookaround)): (?!tmp).* (at character 1)"),
            ("  - {topic: 'a/b', policy: never}\n", "w.yaml:4:5: topic-policies, topic: not a topic name: a/b"),
            ("  - {prefix: 'a b', policy: never}\n", "w.yaml:4:5: topic-policies, prefix: prefix:a b holds ' '"),
            ("  - {topic: b, policy: always}\n", "w.yaml:4:"),
            ("  - {topic: b, prefix: c, policy: never}\n", "w.yaml:4:5: a topic policy is {topic: NAME | prefix: P | regex: R, policy: POLICY}: one selector, this entry has 2"),
            ("  - {policy: never}\n", "one selector, this entry has 0"),
            ("  - {topic: b}\n", "missing field `policy`"),
            ("  - {topic: b, policy: never, why: x}\n", "unknown field `why`"),
            ("  - {topic: audit, policy: under-replicated}\n", "w.yaml:4:13: topic-policies: a second topic policy for topic:audit (the first on line 3)"),
        ] {
            let e = parse(&o(entry)).unwrap_err();
            assert!(e.to_string().contains(want), "{entry:?}: {e}");
            assert_eq!(e.exit_code(), 2, "{e}");
        }
        assert!(parse(&o("  - {topic: always, policy: always}\n")).unwrap_err().to_string().contains("always"));
        // Too many: refused at the first entry over the cap, before it is even checked.
        let mut many = String::new();
        for i in 0..MAX_TOPIC_POLICIES {
            many.push_str(&format!("  - {{topic: t{i}, policy: never}}\n"));
        }
        many.push_str("  - {regex: '(', policy: never}\n");
        let e = parse(&o(&many)).unwrap_err().to_string();
        assert!(e.contains("more than 1000 topic policies"), "{e}");
        // Too many regexes: refused as the one over the cap is read.
        let mut regexes = String::new();
        for i in 0..=MAX_REGEX_POLICIES {
            regexes.push_str(&format!("  - {{regex: 'r{i}.*', policy: never}}\n"));
        }
        let e = parse(&o(&regexes)).unwrap_err().to_string();
        assert!(
            e.contains("w.yaml:3:3: topic-policies, entry 66 (regex:r64.*): more than 64 regex topic policies"),
            "{e}"
        );
        // A second flag for one selector.
        let two = ["topic:a=never", "topic:a=under-replicated"].map(|f| TopicPolicy::parse_flag(f).unwrap()).to_vec();
        let e = resolve(&File { topic_policies: Some(two), ..enabled() }, false, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--topic-policy topic:a=under-replicated: a second topic policy for topic:a (the first: topic:a=never)"
        );
        assert_eq!(e.exit_code(), 2);
    }
}
