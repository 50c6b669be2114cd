//! Pins: what an operator requires of a bundle beyond "signed by this key",
//! so that an older bundle signed by the same key cannot be replayed. Each pin
//! is checked against the signed trusted comment (see `sign::trusted_comment`),
//! never against anything unsigned, and before the archive is read:
//! - not before: the bundle was signed at or after a time (its `timestamp`);
//! - minimum okp version: the okp that made it (its `okp_version`; bundles
//!   made before okp signed its version carry none and fail this pin);
//! - patch set: exactly this patch-set hash (its `patch_set`).
//!
//! One requirement is of the archive, not of the comment: `require_attestations` refuses a bundle
//! without its provenance and SBOM, which a bundle made before okp wrote them lacks and which a
//! key holder could leave out to pass as one (checked with the attestations in `verify`).
//!
//! Not here: the signature itself (`sign`), the report (`verify`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::manifest::is_sha256;

/// What the operator pinned; the default pins nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    pub not_before: Option<Timestamp>,
    pub min_okp_version: Option<OkpVersion>,
    pub patch_set: Option<PatchSet>,
    /// Refuse a bundle without `provenance.intoto.jsonl` and `sbom.cdx.json`.
    pub require_attestations: bool,
}

/// Seconds since the Unix epoch, UTC. Parsed from `YYYY-MM-DD` (midnight UTC),
/// `YYYY-MM-DDTHH:MM:SSZ` or `@SECONDS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub u64);

/// An okp release, `MAJOR.MINOR.PATCH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OkpVersion(pub u64, pub u64, pub u64);

/// A patch-set hash: 64 hex digits, kept in lower case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchSet(String);

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: u64, d: u64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = (y - era * 400) as u64;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe as i64 - 719_468
}

/// The date of a day number (the inverse of `days_from_civil`).
fn civil_from_days(z: i64) -> (i64, u64, u64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = (z - era * 146_097) as u64;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe as i64 + era * 400 + i64::from(m <= 2), m, d)
}

impl FromStr for Timestamp {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a time: give YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ (UTC) or @SECONDS");
        if let Some(secs) = s.strip_prefix('@') {
            return secs.parse().map(Timestamp).map_err(|_| bad());
        }
        let (date, time) = match s.split_once('T') {
            Some((d, t)) => (d, Some(t.strip_suffix('Z').ok_or_else(bad)?)),
            None => (s, None),
        };
        let num = |p: &str, len: usize| -> Option<u64> {
            if p.len() == len && p.bytes().all(|b| b.is_ascii_digit()) {
                p.parse().ok()
            } else {
                None
            }
        };
        let parts: Vec<&str> = date.split('-').collect();
        let [y, m, d] = parts[..] else { return Err(bad()) };
        let (y, m, d) = (num(y, 4).ok_or_else(bad)? as i64, num(m, 2).ok_or_else(bad)?, num(d, 2).ok_or_else(bad)?);
        let days = days_from_civil(y, m, d);
        if !(1..=12).contains(&m) || civil_from_days(days) != (y, m, d) || days < 0 {
            return Err(bad());
        }
        let secs = match time {
            None => 0,
            Some(t) => {
                let parts: Vec<&str> = t.split(':').collect();
                let [h, mi, se] = parts[..] else { return Err(bad()) };
                let (h, mi, se) =
                    (num(h, 2).ok_or_else(bad)?, num(mi, 2).ok_or_else(bad)?, num(se, 2).ok_or_else(bad)?);
                if h > 23 || mi > 59 || se > 59 {
                    return Err(bad());
                }
                h * 3600 + mi * 60 + se
            }
        };
        Ok(Timestamp(days as u64 * 86_400 + secs))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = civil_from_days((self.0 / 86_400) as i64);
        let s = self.0 % 86_400;
        write!(f, "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
    }
}

impl FromStr for OkpVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let n: Vec<Option<u64>> = s.split('.').map(|p| p.parse().ok().filter(|_| !p.starts_with('+'))).collect();
        match n[..] {
            [Some(a), Some(b), Some(c)] => Ok(OkpVersion(a, b, c)),
            _ => Err(format!("`{s}` is not an okp version (MAJOR.MINOR.PATCH, e.g. 0.1.0)")),
        }
    }
}

impl fmt::Display for OkpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

impl FromStr for PatchSet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.trim().to_ascii_lowercase();
        if is_sha256(&lower) {
            Ok(PatchSet(lower))
        } else {
            Err(format!("`{s}` is not a patch-set hash (64 hex digits, as MANIFEST.json's patch_set_hash)"))
        }
    }
}

impl fmt::Display for PatchSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Pins {
    /// Whether a pin of the trusted comment is set (`require_attestations` is of the archive).
    pub fn any(&self) -> bool {
        self.not_before.is_some() || self.min_okp_version.is_some() || self.patch_set.is_some()
    }

    /// Checks the pins against a good signature's trusted comment fields.
    /// `Ok` says what held; `Err` names each pin that failed and the bundle's value.
    pub fn check(&self, signed: &BTreeMap<String, String>) -> Result<String, String> {
        let mut held = Vec::new();
        let mut failed = Vec::new();
        let field = |k: &str| signed.get(k).map(String::as_str);
        if let Some(pin) = self.not_before {
            match field("timestamp").and_then(|t| t.parse().ok()).map(Timestamp) {
                Some(t) if t >= pin => held.push(format!("signed {t}, not before {pin}")),
                Some(t) => failed.push(format!("not-before {pin}: the bundle was signed {t}, earlier")),
                None => failed.push(format!("not-before {pin}: the signature carries no timestamp")),
            }
        }
        if let Some(pin) = self.min_okp_version {
            match field("okp_version") {
                Some(v) => match v.parse::<OkpVersion>() {
                    Ok(have) if have >= pin => held.push(format!("made by okp {have}, at least {pin}")),
                    Ok(have) => failed.push(format!("min-okp-version {pin}: the bundle was made by okp {have}")),
                    Err(_) => failed.push(format!("min-okp-version {pin}: the bundle names okp version `{v}`")),
                },
                None => failed.push(format!(
                    "min-okp-version {pin}: the signature names no okp version (a bundle made before okp signed its version)"
                )),
            }
        }
        if let Some(pin) = &self.patch_set {
            match field("patch_set") {
                Some(p) if p.eq_ignore_ascii_case(&pin.0) => held.push(format!("patch set {}", &pin.0[..12])),
                Some(p) => failed.push(format!("patch-set {pin}: the bundle's patch set is {p:?}")),
                None => failed.push(format!("patch-set {pin}: the signature names no patch set")),
            }
        }
        if failed.is_empty() {
            Ok(held.join("; "))
        } else {
            Err(failed.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(ts: &str, okp: Option<&str>, ps: &str) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("timestamp".to_string(), ts.to_string());
        if let Some(v) = okp {
            m.insert("okp_version".to_string(), v.to_string());
        }
        m.insert("patch_set".to_string(), ps.to_string());
        m
    }

    #[test]
    fn times_parse_in_utc_and_print_back() {
        let t: Timestamp = "2026-11-01".parse().unwrap();
        assert_eq!(t.0, 1_793_491_200);
        assert_eq!(t.to_string(), "2026-11-01T00:00:00Z");
        assert_eq!("2026-11-01T12:34:56Z".parse::<Timestamp>().unwrap().0, 1_793_491_200 + 45_296);
        assert_eq!("@1700000000".parse::<Timestamp>().unwrap().to_string(), "2023-11-14T22:13:20Z");
        assert_eq!("1970-01-01".parse::<Timestamp>().unwrap().0, 0);
        assert_eq!("2024-02-29".parse::<Timestamp>().unwrap().to_string(), "2024-02-29T00:00:00Z");
        for bad in [
            "2025-02-29",
            "2026-13-01",
            "2026-1-01",
            "26-11-01",
            "2026-11-01T25:00:00Z",
            "2026-11-01T10:00:00",
            "1969-12-31",
            "@x",
            "",
        ] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn versions_and_patch_sets_parse_strictly() {
        assert_eq!("0.10.2".parse::<OkpVersion>().unwrap(), OkpVersion(0, 10, 2));
        assert!("0.2.0".parse::<OkpVersion>().unwrap() > "0.1.9".parse().unwrap());
        for bad in ["0.1", "0.1.0.1", "v0.1.0", "0.1.x", "0.1.+1"] {
            assert!(bad.parse::<OkpVersion>().is_err(), "{bad:?}");
        }
        assert_eq!("AB".repeat(32).parse::<PatchSet>().unwrap().to_string(), "ab".repeat(32));
        assert!("ab".repeat(6).parse::<PatchSet>().is_err(), "a prefix is not a pin");
    }

    #[test]
    fn each_pin_holds_or_names_the_bundles_value() {
        let ps = "a".repeat(64);
        let signed = comment("1793491200", Some("0.2.0"), &ps);
        assert_eq!(Pins::default().check(&signed), Ok(String::new()));
        let all = Pins {
            not_before: Some("2026-11-01".parse().unwrap()),
            min_okp_version: Some("0.2.0".parse().unwrap()),
            patch_set: Some(ps.parse().unwrap()),
            require_attestations: false,
        };
        assert!(all.check(&signed).unwrap().contains("signed 2026-11-01T00:00:00Z"));

        let later = Pins { not_before: Some(Timestamp(1_793_491_201)), ..Pins::default() };
        assert_eq!(
            later.check(&signed),
            Err("not-before 2026-11-01T00:00:01Z: the bundle was signed 2026-11-01T00:00:00Z, earlier".into())
        );
        let newer = Pins { min_okp_version: Some(OkpVersion(0, 3, 0)), ..Pins::default() };
        assert_eq!(newer.check(&signed), Err("min-okp-version 0.3.0: the bundle was made by okp 0.2.0".into()));
        assert!(newer.check(&comment("1", None, &ps)).unwrap_err().contains("names no okp version"));
        let other = Pins { patch_set: Some("b".repeat(64).parse().unwrap()), ..Pins::default() };
        assert!(other.check(&signed).unwrap_err().contains(&format!("the bundle's patch set is \"{ps}\"")));
        // Every failing pin is named, not only the first.
        let e = Pins { not_before: later.not_before, ..other }.check(&signed).unwrap_err();
        assert!(e.contains("not-before") && e.contains("patch-set"), "{e}");
    }
}
