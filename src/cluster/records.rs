//! Records in and out: the console producer (acks=all, optionally while something happens to
//! the cluster), the console consumer, okp's group-less reader, and okp's long-running client.
//!
//! Not here: what a scenario expects of them (`scenarios`).

use std::time::{Duration, Instant};

use super::tools::Tool;
use super::{args, client, Cluster};
use crate::error::Result;

pub struct Produced {
    /// The records acknowledged (all of them when the producer reported no error; none otherwise).
    pub values: Vec<String>,
    pub sent: usize,
    pub errors: usize,
    pub rc: i32,
}

impl Produced {
    pub fn all_acked(&self) -> bool {
        self.values.len() == self.sent
    }
}

impl Cluster {
    /// Produces `n` unique records with acks=all through the console producer.
    pub fn produce(&mut self, topic: &str, tag: &str, n: usize, exclude: &[i32]) -> Result<Produced> {
        self.produce_during(topic, tag, n, exclude, None)
    }

    /// As `produce`, with a producer that is not idempotent: it never asks a broker for a
    /// producer id, so it talks only to its bootstrap brokers and the leader (a frozen broker
    /// still in the metadata cannot stall it).
    pub fn produce_not_idempotent(&mut self, topic: &str, tag: &str, n: usize, exclude: &[i32]) -> Result<Produced> {
        self.produce_with(topic, tag, n, exclude, None, &["enable.idempotence=false"])
    }

    /// As `produce`, running `during` once the producer JVM has started (to kill a broker mid-stream).
    pub fn produce_during(
        &mut self,
        topic: &str,
        tag: &str,
        n: usize,
        exclude: &[i32],
        during: Option<&mut dyn FnMut(&mut Cluster)>,
    ) -> Result<Produced> {
        self.produce_with(topic, tag, n, exclude, during, &[])
    }

    /// `produce_during` with extra producer properties (later ones win: `delivery.timeout.ms=8000`).
    pub fn produce_with(
        &mut self,
        topic: &str,
        tag: &str,
        n: usize,
        exclude: &[i32],
        during: Option<&mut dyn FnMut(&mut Cluster)>,
        extra: &[&str],
    ) -> Result<Produced> {
        let values: Vec<String> = (0..n).map(|i| format!("{tag}-{i:06}")).collect();
        let input = self.run_dir.join("tools").join(format!("input-{tag}.txt"));
        crate::fsx::write_atomic(&input, (values.join("\n") + "\n").as_bytes())?;
        let boot = self.bootstrap(exclude);
        let mut a = args(&[
            "--bootstrap-server",
            &boot,
            "--topic",
            topic,
            "--request-required-acks",
            "all",
            "--producer-property",
            "acks=all",
            "--producer-property",
            "linger.ms=5",
            "--producer-property",
            "delivery.timeout.ms=30000",
            "--producer-property",
            "request.timeout.ms=10000",
        ]);
        for p in extra {
            a.extend(args(&["--producer-property", p]));
        }
        let running = self.tools.spawn(Tool::Producer, &a, Some(&input))?;
        if let Some(f) = during {
            f(self);
        }
        let out = running.finish(Duration::from_secs(90));
        self.journal.tool(Tool::Producer.label(), &out);
        let errors = out.stderr.lines().filter(|l| l.contains("Error when sending message")).count();
        let ok = out.ok() && errors == 0;
        Ok(Produced { values: if ok { values } else { Vec::new() }, sent: n, errors, rc: out.rc })
    }

    /// Reads partition 0 of `topic` from the earliest offset (assign mode: no group coordinator needed).
    pub fn consume(&mut self, topic: &str, max: usize, read_committed: bool, exclude: &[i32]) -> Result<Vec<String>> {
        self.consume_with(topic, max, read_committed, exclude, &[], 15000)
    }

    /// `consume` with consumer properties (`client.rack=…`) and the tool's own idle timeout.
    pub fn consume_with(
        &mut self,
        topic: &str,
        max: usize,
        read_committed: bool,
        exclude: &[i32],
        props: &[&str],
        timeout_ms: u64,
    ) -> Result<Vec<String>> {
        let boot = self.bootstrap(exclude);
        let max_s = max.to_string();
        let mut a = args(&[
            "--bootstrap-server",
            &boot,
            "--topic",
            topic,
            "--partition",
            "0",
            "--offset",
            "earliest",
            "--max-messages",
            &max_s,
            "--timeout-ms",
            &timeout_ms.to_string(),
        ]);
        if read_committed {
            a.extend(args(&["--isolation-level", "read_committed"]));
        }
        for p in props {
            a.extend(args(&["--consumer-property", p]));
        }
        let out = self.tool(Tool::Consumer, &a, None, Duration::from_millis(timeout_ms + 45_000))?;
        // 4.2 on prints "Option --consumer-property is deprecated ..." on stdout.
        let notice = |l: &str| l.starts_with("Option --") && l.contains(" is deprecated");
        Ok(out.stdout.lines().filter(|l| !notice(l)).map(str::to_string).collect())
    }

    /// Reads partition 0 of `topic` from its start with okp's own reader (the soak client's
    /// `read`), which has no group id and so never waits for a group coordinator; compiled
    /// against the release's classpath on first use. A release's console consumer always
    /// joins a group, and 3.2.0's polls nothing in assign mode while the group's coordinator
    /// is offline (every replica of its `__consumer_offsets` partition down).
    pub fn consume_without_group(&mut self, topic: &str, max: usize, exclude: &[i32]) -> Result<Vec<String>> {
        let classes = self.okp_client_classes()?;
        let boot = self.bootstrap(exclude);
        self.journal.note(&format!(
            "okp-reader: okp's OkpSoakClient `read` (no group id), its classes ({}) appended to the classpath",
            classes.display()
        ));
        let a = args(&["read", &boot, topic, &max.to_string(), "15000"]);
        let out = self.tools.run_class(client::CLASS, &classes, &a, Duration::from_secs(75))?;
        self.journal.tool("okp-reader", &out);
        Ok(out
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("read\t"))
            .filter_map(|l| l.splitn(4, '\t').nth(3))
            .map(str::to_string)
            .collect())
    }

    /// Starts a long-running `OkpSoakClient` (`produce …` or `consume …`) under the tools' JVM
    /// flags, its stderr in `okp-client/<name>.err`; its lines are timed from `t0`.
    pub fn spawn_okp_client(&mut self, name: &str, args: &[String], t0: Instant) -> Result<client::Client> {
        let classes = self.okp_client_classes()?;
        let classpath = format!("{}:{}", self.tools.classpath, classes.display());
        let logs = self.run_dir.join("okp-client");
        crate::fsx::create_dir(&logs)?;
        let err = logs.join(format!("{name}.err"));
        self.journal.note(&format!("okp client {name} started: OkpSoakClient {}", args.join(" ")));
        client::Client::spawn(name, &self.rt.java, &self.tools.jvm, &classpath, args, &err, t0)
    }
}
