//! Artifacts from Maven Central, through the machine's own Maven client
//! (`mvn`), so corporate mirrors and proxies in settings.xml just work and okp
//! names no repository host itself.
//!
//! Files land in a Maven local repository (default ~/.m2/repository, or
//! OKP_MAVEN_REPO_LOCAL), which is okp's cache: a warm cache never runs mvn.

use std::path::PathBuf;
use std::process::Command;

use crate::error::{Error, Result};
use crate::model::Coordinate;

/// The dependency plugin okp asks mvn to run, pinned so resolution behaves the same everywhere.
const DEPENDENCY_PLUGIN_VERSION: &str = "3.6.1";

pub struct Maven {
    pub repo_local: PathBuf,
    mvn: String,
    settings: Option<PathBuf>,
}

impl Maven {
    /// Configured from the environment: OKP_MAVEN_REPO_LOCAL, OKP_MVN, OKP_MAVEN_SETTINGS. The
    /// local repository defaults to `~/.m2/repository`, `~` being HOME or, when HOME is unset or
    /// empty, the user's home in the password database (as mvn's Java finds it); with neither,
    /// okp refuses (exit 2) rather than fill the current directory with a `.m2/`.
    pub fn from_env() -> Result<Maven> {
        let repo_local = repo_local(std::env::var_os("OKP_MAVEN_REPO_LOCAL"), std::env::var_os("HOME"), passwd_home)?;
        Ok(Maven {
            repo_local,
            mvn: std::env::var("OKP_MVN").unwrap_or_else(|_| "mvn".to_string()),
            settings: std::env::var_os("OKP_MAVEN_SETTINGS").map(PathBuf::from),
        })
    }

    pub fn path(&self, c: &Coordinate, classifier: Option<&str>) -> PathBuf {
        self.repo_local.join(c.repo_path(classifier))
    }

    /// Paths of the artifacts, fetching the missing ones in one mvn run.
    pub fn ensure(&self, items: &[(Coordinate, Option<&str>)]) -> Result<Vec<PathBuf>> {
        let paths: Vec<PathBuf> = items.iter().map(|(c, cl)| self.path(c, *cl)).collect();
        let missing: Vec<&(Coordinate, Option<&str>)> =
            items.iter().zip(&paths).filter(|(_, p)| !p.is_file()).map(|(i, _)| i).collect();
        if missing.is_empty() {
            return Ok(paths);
        }
        self.resolve(&missing)?;
        for ((c, cl), p) in items.iter().zip(&paths) {
            if !p.is_file() {
                return Err(Error::External(format!(
                    "mvn reported success but {} is not in {} ({c}{})",
                    p.display(),
                    self.repo_local.display(),
                    cl.map(|c| format!(":{c}")).unwrap_or_default()
                )));
            }
        }
        Ok(paths)
    }

    /// The runtime classpath of `c`: its jar and its transitive compile and
    /// runtime dependencies, as mvn resolves them. Cached beside the local
    /// repository (okp-classpath/), so a warm cache runs no mvn.
    pub fn classpath(&self, c: &Coordinate) -> Result<Vec<PathBuf>> {
        self.classpath_of(std::slice::from_ref(c), &format!("{}-{}-{}", c.group, c.artifact, c.version))
    }

    /// The runtime classpath of several artifacts resolved together (one
    /// version per group:artifact, as Maven mediates it), with the first
    /// artifact's jar leading. `key` names the cache file.
    pub fn classpath_of(&self, deps: &[Coordinate], key: &str) -> Result<Vec<PathBuf>> {
        let items: Vec<(Coordinate, Option<&str>)> = deps.iter().map(|c| (c.clone(), None)).collect();
        self.classpath_with(&items, key)
    }

    /// `classpath_of` where a dependency may carry a classifier (`test`: a module's test jar,
    /// whose own dependencies the POM does not name, so it brings none).
    pub fn classpath_with(&self, deps: &[(Coordinate, Option<&str>)], key: &str) -> Result<Vec<PathBuf>> {
        self.classpath_excluding(deps, &[], key)
    }

    /// `classpath_with` where every dependency leaves out the `group:artifact`s of `exclude`
    /// (and what only they bring).
    pub fn classpath_excluding(
        &self,
        deps: &[(Coordinate, Option<&str>)],
        exclude: &[(&str, &str)],
        key: &str,
    ) -> Result<Vec<PathBuf>> {
        let exclusions: String = if exclude.is_empty() {
            String::new()
        } else {
            let each: String = exclude
                .iter()
                .map(|(g, a)| format!("<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"))
                .collect();
            format!("<exclusions>{each}</exclusions>")
        };
        let (first, first_classifier) = deps.first().ok_or_else(|| Error::Source("classpath of nothing".into()))?;
        let cache = self.repo_local.join("okp-classpath").join(format!("{key}.txt"));
        if let Ok(text) = crate::fsx::read::text(&cache, crate::fsx::read::MAX_TEXT, "classpath cache") {
            let paths: Vec<PathBuf> = std::env::split_paths(text.trim()).collect();
            if !paths.is_empty() && paths.iter().all(|p| p.is_file()) {
                return Ok(paths);
            }
        }
        let work = tempfile::tempdir().map_err(|e| Error::io("cannot create a temporary directory for mvn", e))?;
        let pom = work.path().join("pom.xml");
        let out = work.path().join("classpath.txt");
        let dep: String = deps
            .iter()
            .map(|(c, cl)| {
                format!(
                    "<dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version>{}{exclusions}</dependency>",
                    c.group,
                    c.artifact,
                    c.version,
                    cl.map(|cl| format!("<classifier>{cl}</classifier>")).unwrap_or_default()
                )
            })
            .collect();
        let xml = format!(
            "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>okp.fetch</groupId>\n  <artifactId>classpath</artifactId>\n  <version>0</version>\n  <packaging>pom</packaging>\n  <dependencies>{dep}</dependencies>\n</project>\n"
        );
        std::fs::write(&pom, xml).map_err(|e| Error::io("cannot write the temporary pom.xml", e))?;
        let mut cmd = Command::new(&self.mvn);
        cmd.arg("-B").arg("-f").arg(&pom);
        cmd.arg(format!("-Dmaven.repo.local={}", self.repo_local.display()));
        if let Some(s) = &self.settings {
            cmd.arg("-s").arg(s);
        }
        cmd.arg(format!(
            "org.apache.maven.plugins:maven-dependency-plugin:{DEPENDENCY_PLUGIN_VERSION}:build-classpath"
        ));
        cmd.arg(format!("-Dmdep.outputFile={}", out.display())).arg("-Dmdep.includeScope=runtime");
        let names = deps
            .iter()
            .map(|(c, cl)| format!("{c}{}", cl.map(|cl| format!(":{cl}")).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", ");
        crate::out::note(format!("resolving the classpath of {names} with mvn"));
        let o = cmd
            .output()
            .map_err(|e| Error::External(format!("cannot run `{}` ({e}); install Maven or set OKP_MVN", self.mvn)))?;
        if !o.status.success() {
            let log = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            return Err(classify_failure(&log, &names));
        }
        let text = crate::fsx::read::text(&out, crate::fsx::read::MAX_TEXT, "classpath mvn wrote")?;
        let mut paths: Vec<PathBuf> = std::env::split_paths(text.trim()).collect();
        // The first artifact leads, then the rest in mvn's order.
        let lead = self.ensure(&[(first.clone(), *first_classifier)])?.remove(0);
        paths.retain(|p| p != &lead);
        paths.insert(0, lead);
        if let Some(d) = cache.parent() {
            let _ = std::fs::create_dir_all(d);
            let joined =
                std::env::join_paths(&paths).map_err(|e| Error::Source(format!("classpath of {names}: {e}")))?;
            let _ = std::fs::write(&cache, joined.to_string_lossy().as_bytes());
        }
        Ok(paths)
    }

    fn resolve(&self, items: &[&(Coordinate, Option<&str>)]) -> Result<()> {
        let work = tempfile::tempdir().map_err(|e| Error::io("cannot create a temporary directory for mvn", e))?;
        let pom = work.path().join("pom.xml");
        std::fs::write(&pom, pom_xml(items, &work.path().join("copied")))
            .map_err(|e| Error::io("cannot write the temporary pom.xml", e))?;
        let mut cmd = Command::new(&self.mvn);
        cmd.arg("-B").arg("-U").arg("-f").arg(&pom);
        cmd.arg(format!("-Dmaven.repo.local={}", self.repo_local.display()));
        if let Some(s) = &self.settings {
            cmd.arg("-s").arg(s);
        }
        cmd.arg(format!("org.apache.maven.plugins:maven-dependency-plugin:{DEPENDENCY_PLUGIN_VERSION}:copy"));
        let wanted = items
            .iter()
            .map(|(c, cl)| format!("{c}{}", cl.map(|c| format!(":{c}")).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", ");
        crate::out::note(format!(
            "fetching {} artifact(s) from Maven Central with mvn into {}",
            items.len(),
            self.repo_local.display()
        ));
        let out = cmd.output().map_err(|e| {
            Error::External(format!("cannot run `{}` ({e}); okp fetches from Maven Central through Maven: install it (apt-get install maven) or set OKP_MVN", self.mvn))
        })?;
        if out.status.success() {
            return Ok(());
        }
        let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        Err(classify_failure(&log, &wanted))
    }
}

/// Turns mvn's failure output into a sentence: unreachable repository (exit 3)
/// versus an artifact that does not exist (an input error, exit 2).
/// The local repository: `explicit` (OKP_MAVEN_REPO_LOCAL), else `.m2/repository` under `home`
/// (HOME) or, when that is unset or empty, under what `passwd` finds.
fn repo_local(
    explicit: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
    passwd: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf> {
    if let Some(dir) = explicit.filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = home.filter(|h| !h.is_empty()).map(PathBuf::from).or_else(passwd).ok_or_else(|| {
        Error::Usage(
            "cannot tell where the Maven local repository is: HOME is not set and this user has no home directory in the password database; set HOME, or OKP_MAVEN_REPO_LOCAL to the repository (okp will not make a .m2/ in the current directory)".into(),
        )
    })?;
    Ok(home.join(".m2").join("repository"))
}

/// The current user's home directory in the password database (getpwuid_r), if it names one.
fn passwd_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: an all-zero passwd is a valid value of a plain C struct; getpwuid_r fills it.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to memory this function owns for the call; `buf.len()` is its size.
    let rc = unsafe { libc::getpwuid_r(libc::getuid(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pw.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points into `buf`, NUL-terminated by getpwuid_r, alive until this returns.
    let dir = unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) };
    let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    // An empty or relative entry would put the repository under the current directory again.
    dir.is_absolute().then(|| dir.to_path_buf())
}

fn classify_failure(log: &str, wanted: &str) -> Error {
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("[ERROR]"))
        .map(|l| l.trim_start_matches("[ERROR]").trim())
        .filter(|l| !l.is_empty())
        .collect();
    let first = errors.first().copied().unwrap_or("mvn failed without an [ERROR] line");
    let network = [
        "Could not transfer",
        "Connection refused",
        "UnknownHost",
        "Network is unreachable",
        "timed out",
        "Connect to",
        "No route to host",
    ];
    let absent = ["was not found in", "Could not find artifact", "could not be resolved: org.apache.kafka"];
    if network.iter().any(|n| log.contains(n)) {
        Error::External(format!("cannot reach Maven Central through mvn while fetching {wanted}: {first}"))
    } else if absent.iter().any(|n| log.contains(n)) {
        Error::NotPublished(format!("{wanted}: {first}"))
    } else {
        Error::External(format!("mvn failed while fetching {wanted}: {first}"))
    }
}

/// A pom whose dependency plugin copies every item: `artifactItems`, unlike
/// `<dependencies>`, may name one artifact at several versions (Maven keeps
/// only one version of a dependency per group:artifact).
fn pom_xml(items: &[&(Coordinate, Option<&str>)], out: &std::path::Path) -> String {
    let mut list = String::new();
    for (c, cl) in items {
        list.push_str(&format!(
            "          <artifactItem><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version><type>jar</type>{}</artifactItem>\n",
            c.group,
            c.artifact,
            c.version,
            cl.map(|c| format!("<classifier>{c}</classifier>")).unwrap_or_default()
        ));
    }
    format!(
        "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>okp.fetch</groupId>\n  <artifactId>fetch</artifactId>\n  <version>0</version>\n  <packaging>pom</packaging>\n  <build><plugins><plugin>\n    <groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>{DEPENDENCY_PLUGIN_VERSION}</version>\n    <configuration>\n      <outputDirectory>{}</outputDirectory>\n      <artifactItems>\n{list}      </artifactItems>\n    </configuration>\n  </plugin></plugins></build>\n</project>\n",
        out.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_home_the_repository_is_the_passwd_home_or_a_refusal_never_the_current_directory() {
        let none = || None;
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(repo_local(os("/r"), os("/h"), none).unwrap(), PathBuf::from("/r"));
        assert_eq!(repo_local(None, os("/h"), none).unwrap(), PathBuf::from("/h/.m2/repository"));
        // HOME unset or empty: the password database's home.
        for home in [None, os("")] {
            let got = repo_local(None, home, || Some(PathBuf::from("/home/kafka"))).unwrap();
            assert_eq!(got, PathBuf::from("/home/kafka/.m2/repository"));
        }
        // Neither: refused as bad input, naming the way out.
        let e = repo_local(os(""), None, none).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains("set HOME, or OKP_MAVEN_REPO_LOCAL"), "{msg}");
        // This process's user has an entry (its home is absolute, never "").
        let mine = passwd_home().expect("the test user has a passwd entry");
        assert!(mine.is_absolute(), "{}", mine.display());
    }

    #[test]
    fn classifies_unreachable_and_absent() {
        let net = "[ERROR] Failed to execute goal: Could not transfer artifact x from/to central: Connection refused";
        assert!(matches!(classify_failure(net, "x"), Error::External(_)));
        let absent = "[ERROR] Failed to execute goal on project fetch: Could not resolve dependencies: Could not find artifact org.apache.kafka:kafka_2.13:jar:sources:9.9.9 in central";
        assert!(matches!(classify_failure(absent, "x"), Error::NotPublished(_)));
    }
}
