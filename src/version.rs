//! `KafkaVersion`: a final Apache Kafka release number such as `3.9.2`.
//!
//! Parsed once at the edge (flags, YAML, gradle.properties) and compared
//! numerically everywhere else, so `3.10.0` sorts after `3.9.2`.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KafkaVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl KafkaVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        KafkaVersion { major, minor, patch }
    }
}

impl fmt::Display for KafkaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl FromStr for KafkaVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a Kafka release number (expected MAJOR.MINOR.PATCH, e.g. 3.9.2)");
        let parts: Vec<&str> = s.trim().split('.').collect();
        if parts.len() != 3 {
            return Err(bad());
        }
        let num = |p: &str| -> Result<u32, String> {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 4 {
                return Err(bad());
            }
            p.parse().map_err(|_| bad())
        };
        Ok(KafkaVersion::new(num(parts[0])?, num(parts[1])?, num(parts[2])?))
    }
}

impl serde::Serialize for KafkaVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Only the string `Serialize` writes (`3.9.2`): files okp wrote spell it that way, so any
/// other spelling (` 3.9.2`, `03.9.2`) is not okp's and is refused.
impl<'de> serde::Deserialize<'de> for KafkaVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        let v: KafkaVersion = s.parse().map_err(serde::de::Error::custom)?;
        if v.to_string() != s {
            return Err(serde::de::Error::custom(format!("`{s}` is not spelt as okp writes a release (`{v}`)")));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders_numerically() {
        let a: KafkaVersion = "3.9.2".parse().unwrap();
        let b: KafkaVersion = "3.10.0".parse().unwrap();
        assert!(a < b);
        assert_eq!(a.to_string(), "3.9.2");
    }

    #[test]
    fn serializes_to_the_string_it_parses_from() {
        let v: KafkaVersion = serde_json::from_str("\"3.10.0\"").unwrap();
        assert_eq!(v, KafkaVersion::new(3, 10, 0));
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"3.10.0\"");
        let e = serde_json::from_str::<KafkaVersion>("\"3.9\"").unwrap_err().to_string();
        assert!(e.contains("not a Kafka release number"), "{e}");
        for odd in ["\" 3.9.2\"", "\"03.9.2\""] {
            let e = serde_json::from_str::<KafkaVersion>(odd).unwrap_err().to_string();
            assert!(e.contains("is not spelt as okp writes a release (`3.9.2`)"), "{e}");
        }
    }

    #[test]
    fn rejects_non_releases() {
        for bad in ["3.9", "3.9.2-SNAPSHOT", "v3.9.2", "3..2", "", "3.9.2.1"] {
            assert!(bad.parse::<KafkaVersion>().is_err(), "{bad} should be rejected");
        }
    }
}
