//! The release's own admin tools, journaled: any tool call (one JVM, a batch, the resident
//! JVM), topics (create, describe, delete), elections, reassignments, offsets, the active
//! controller, the ZooKeeper shell, JMX reads and segment dumps.
//!
//! Not here: producing and consuming records (`records`), the tool runner (`tools`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::tools::{self, Output, PartitionState, Tool};
use super::{args, client, resident, Cluster};
use crate::error::{Error, Result};
use crate::model::Mode;

impl Cluster {
    /// From here on the short admin tools run in a resident tool JVM (resident.rs), unless
    /// OKP_TOOL_JVM_PER_CALL is set or okp's Java classes cannot be had.
    pub(super) fn start_resident_tools(&mut self) {
        if std::env::var_os("OKP_TOOL_JVM_PER_CALL").is_some() {
            self.journal.note("tools: one JVM per call (OKP_TOOL_JVM_PER_CALL)");
            return;
        }
        match self.okp_client_classes() {
            Ok(classes) => {
                self.journal.note(&format!(
                    "tools: the short admin calls ({}) run from here on in the lane's resident tool JVM, {} calls each, journaled as `java … {} {} CLASS ARGS`",
                    Tool::ALL.iter().filter(|t| t.resident()).map(|t| t.label()).collect::<Vec<_>>().join(", "),
                    resident::MAX_CALLS,
                    client::BATCH_CLASS,
                    resident::SERVE
                ));
                self.tools.resident_classes = Some(classes);
            }
            Err(e) => self.journal.note(&format!("tools: one JVM per call (okp's Java classes: {e})")),
        }
    }

    /// Runs a tool and journals it.
    pub fn tool(&mut self, t: Tool, args: &[String], stdin: Option<&Path>, timeout: Duration) -> Result<Output> {
        let out = self.tools.run(t, args, stdin, timeout)?;
        self.journal.tool(t.label(), &out);
        Ok(out)
    }

    /// One read of node `id`'s JMX gauges (attribute `Value`) whose object
    /// names match `patterns`, with the release's own JmxTool: name -> value.
    pub fn jmx(&mut self, id: i32, patterns: &[&str]) -> Result<BTreeMap<String, f64>> {
        self.jmx_attribute(id, patterns, "Value")
    }

    /// `jmx` of another attribute (a meter's `Count`); keys keep their `:Count` suffix.
    pub fn jmx_attribute(&mut self, id: i32, patterns: &[&str], attribute: &str) -> Result<BTreeMap<String, f64>> {
        let url = format!("service:jmx:rmi:///jndi/rmi://127.0.0.1:{}/jmxrmi", self.jmx_port(id));
        let mut a = vec![
            "--jmx-url".to_string(),
            url,
            "--one-time".into(),
            "true".into(),
            "--attributes".into(),
            attribute.into(),
        ];
        for p in patterns {
            a.push("--object-name".into());
            a.push(p.to_string());
        }
        let out = self.tool(Tool::Jmx, &a, None, Duration::from_secs(60))?;
        let read = tools::parse_jmx(&out.stdout);
        if !out.ok() || read.is_empty() {
            return Err(Error::External(format!(
                "JmxTool on node {id} read nothing (rc {}): {}",
                out.rc,
                out.stderr.lines().chain(out.stdout.lines()).rfind(|l| !l.trim().is_empty()).unwrap_or("")
            )));
        }
        Ok(read)
    }

    /// Starts a tool without waiting for it (`finish_tool` collects and journals it).
    pub fn spawn_tool(&mut self, t: Tool, args: &[String]) -> Result<tools::Running> {
        self.tools.spawn(t, args, None)
    }

    pub fn finish_tool(&mut self, t: Tool, running: tools::Running, timeout: Duration) -> Output {
        let out = running.finish(timeout);
        self.journal.tool(t.label(), &out);
        out
    }

    /// The state of partition 0 of `topic`, asked of the live brokers.
    ///
    /// A describe that the cluster answers with an error (rc != 0, not a
    /// timeout) is asked again, up to three times a second apart: the tool's
    /// DescribeConfigs goes to any broker, and a broker that has just been
    /// thawed answers it with UnknownServerException while it re-registers
    /// with ZooKeeper (seen in CI on 3.9.2 zk, right after LAT's SIGCONT).
    /// Every attempt is journaled.
    pub fn describe(&mut self, topic: &str) -> Result<Option<PartitionState>> {
        let out = self.describe_output(Some(topic))?;
        Ok(tools::parse_describe(&out.stdout, topic, 0))
    }

    /// Every partition of every topic, internal ones included: (topic, partition, state).
    pub fn describe_all(&mut self) -> Result<Vec<(String, u32, PartitionState)>> {
        let out = self.describe_output(None)?;
        if !out.ok() {
            return Err(Error::External(format!("describe of every topic failed (rc {})", out.rc)));
        }
        Ok(tools::parse_describe_all(&out.stdout))
    }

    pub(super) fn describe_output(&mut self, topic: Option<&str>) -> Result<Output> {
        let boot = self.bootstrap(&[]);
        let mut a = args(&["--bootstrap-server", &boot, "--describe"]);
        if let Some(t) = topic {
            a.extend(args(&["--topic", t]));
        }
        let what = topic.unwrap_or("every topic");
        let mut attempt = 1;
        loop {
            let out = self.tool(Tool::Topics, &a, None, Duration::from_secs(30))?;
            if out.ok() || out.timed_out || attempt == 3 {
                return Ok(out);
            }
            self.journal.note(&format!(
                "describe of {what} failed (rc {}, attempt {attempt} of 3): asking again in 1 s",
                out.rc
            ));
            std::thread::sleep(Duration::from_secs(1));
            attempt += 1;
        }
    }

    pub fn delete_topic(&mut self, topic: &str) -> Result<Output> {
        let boot = self.bootstrap(&[]);
        self.tool(
            Tool::Topics,
            &args(&["--bootstrap-server", &boot, "--delete", "--topic", topic]),
            None,
            Duration::from_secs(60),
        )
    }

    pub fn create_topic(&mut self, topic: &str, assignment: &str, configs: &[&str]) -> Result<Output> {
        Ok(self.create_topics(&[(topic, assignment, configs)])?.remove(0))
    }

    /// Creates topics with explicit replica assignments, one kafka-topics call each, in one JVM
    /// (`tool_batch`).
    pub fn create_topics(&mut self, topics: &[(&str, &str, &[&str])]) -> Result<Vec<Output>> {
        let boot = self.bootstrap(&[]);
        let calls: Vec<Vec<String>> = topics
            .iter()
            .map(|(topic, assignment, configs)| {
                let mut a = args(&[
                    "--bootstrap-server",
                    &boot,
                    "--create",
                    "--topic",
                    topic,
                    "--replica-assignment",
                    assignment,
                ]);
                for c in *configs {
                    a.push("--config".into());
                    a.push(c.to_string());
                }
                a
            })
            .collect();
        self.tool_batch(Tool::Topics, &calls, |_| Tool::Topics.label().to_string(), Duration::from_secs(60))
    }

    /// Runs the release's tool `t` once per entry of `calls` in one JVM (okp's `OkpToolBatch`:
    /// the tool's own main, its exit caught; a single call runs as the tool itself); one `Output`
    /// per call, each journaled as `label(i)`.
    pub fn tool_batch(
        &mut self,
        t: Tool,
        calls: &[Vec<String>],
        label: impl Fn(usize) -> String,
        timeout: Duration,
    ) -> Result<Vec<Output>> {
        let outs = if let [one] = calls {
            vec![self.tools.run(t, one, None, timeout)?]
        } else {
            let classes = self.okp_client_classes()?;
            self.tools.batch(t, &classes, calls, timeout)?
        };
        for (i, out) in outs.iter().enumerate() {
            self.journal.tool(&label(i), out);
        }
        Ok(outs)
    }

    /// The end offset (high watermark for a read_uncommitted reader) of partition 0.
    pub fn end_offset(&mut self, topic: &str, exclude: &[i32]) -> Result<Option<i64>> {
        let boot = self.bootstrap(exclude);
        let flag = if self.rt.version.major == 2 { "--broker-list" } else { "--bootstrap-server" };
        let out = self.tool(
            Tool::Offsets,
            &args(&[flag, &boot, "--topic", topic, "--time", "-1"]),
            None,
            Duration::from_secs(30),
        )?;
        Ok(tools::parse_offset(&out.stdout, topic, 0))
    }

    pub fn elect(&mut self, topic: &str, kind: &str, exclude: &[i32]) -> Result<Output> {
        let boot = self.bootstrap(exclude);
        self.tool(
            Tool::Elect,
            &args(&["--bootstrap-server", &boot, "--election-type", kind, "--topic", topic, "--partition", "0"]),
            None,
            Duration::from_secs(60),
        )
    }

    /// Runs kafka-reassign-partitions on partition 0 of `topic` with target `replicas` and
    /// `action` (`--execute`, `--verify`); the JSON file stays in the run's tools directory.
    pub fn reassign(&mut self, topic: &str, replicas: &[i32], action: &str) -> Result<Output> {
        self.reassign_with(topic, replicas, &[action])
    }

    /// `reassign` with several tool flags (`--execute --additional`: replace a reassignment in progress).
    pub fn reassign_with(&mut self, topic: &str, replicas: &[i32], actions: &[&str]) -> Result<Output> {
        let list = replicas.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        let json = format!(
            "{{\"version\":1,\"partitions\":[{{\"topic\":\"{topic}\",\"partition\":0,\"replicas\":[{}]}}]}}\n",
            list.join(",")
        );
        let file = self.run_dir.join("tools").join(format!("reassign-{topic}-{}.json", list.join("-")));
        crate::fsx::write_atomic(&file, json.as_bytes())?;
        let boot = self.bootstrap(&[]);
        let path = file.display().to_string();
        let mut a = args(&["--bootstrap-server", &boot, "--reassignment-json-file", &path]);
        a.extend(args(actions));
        self.tool(Tool::Reassign, &a, None, Duration::from_secs(60))
    }

    /// Batch headers of a replica's first segment, through DumpLogSegments.
    pub fn dump_batches(&mut self, broker: i32, topic: &str) -> Result<Vec<String>> {
        let seg = self.segment(broker, topic).display().to_string();
        let out =
            self.tool(Tool::Dump, &args(&["--deep-iteration", "--files", &seg]), None, Duration::from_secs(60))?;
        Ok(tools::batch_lines(&out.stdout))
    }

    /// The node id of the active controller.
    pub fn active_controller(&mut self) -> Result<Option<i32>> {
        if self.mode == Mode::Kraft {
            let boot = self.bootstrap(&[]);
            let out = self.tool(
                Tool::Quorum,
                &args(&["--bootstrap-server", &boot, "describe", "--status"]),
                None,
                Duration::from_secs(30),
            )?;
            return Ok(out
                .stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix("LeaderId:").and_then(|v| v.trim().parse().ok())));
        }
        let out = self.zk(&["get", "/controller"])?;
        Ok(out.stdout.lines().find_map(|l| {
            let at = l.find("\"brokerid\":")? + "\"brokerid\":".len();
            l[at..].trim().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
        }))
    }

    /// One command of the release's ZooKeeper shell against the cluster's ZooKeeper (zk mode).
    pub fn zk(&mut self, command: &[&str]) -> Result<Output> {
        let mut a = args(&["-server", &format!("127.0.0.1:{}", self.base_port)]);
        a.extend(args(command));
        self.tool(Tool::ZooKeeperShell, &a, None, Duration::from_secs(30))
    }
}
