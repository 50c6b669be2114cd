//! The ports of a cluster: one block of `PORT_BLOCK` loopback ports claimed for its life, and
//! where each node's listener, controller listener and JMX port sit in it.
//!
//! Not here: who answers on them (`probes`).

use std::net::TcpListener;

use super::{Cluster, CONTROLLERS};
use crate::error::{Error, Result};

impl Cluster {
    pub fn broker_port(&self, id: i32) -> u16 {
        match id {
            // MULTI's fifth broker: base+9 is free in the block (JMX ends at base+8, controllers start at base+11).
            5 => self.base_port + 9,
            _ => self.base_port + id as u16,
        }
    }

    /// A node's JMX port (registry and RMI server both), bound to 127.0.0.1,
    /// inside the block `free_port_block` reserved: brokers base+5..base+8,
    /// KRaft controllers base+14..base+16.
    pub fn jmx_port(&self, id: i32) -> u16 {
        if CONTROLLERS.contains(&id) {
            self.base_port + 14 + (id - CONTROLLERS[0]) as u16
        } else {
            self.base_port + 4 + id as u16
        }
    }

    /// JVM flags that open JMX on 127.0.0.1 only, without authentication: what
    /// JmxTool reads (MET from the brokers, PREF from the controllers).
    pub(super) fn jmx_flags(&self, id: i32) -> Vec<String> {
        let port = self.jmx_port(id);
        let mut flags = vec![
            "-Dcom.sun.management.jmxremote=true".to_string(),
            format!("-Dcom.sun.management.jmxremote.port={port}"),
            format!("-Dcom.sun.management.jmxremote.rmi.port={port}"),
            "-Dcom.sun.management.jmxremote.host=127.0.0.1".to_string(),
            "-Djava.rmi.server.hostname=127.0.0.1".to_string(),
            "-Dcom.sun.management.jmxremote.authenticate=false".to_string(),
            "-Dcom.sun.management.jmxremote.ssl=false".to_string(),
        ];
        // The JMX exporter as an agent when the cluster is monitored (its paths checked when set).
        if let Some(m) = &self.monitor {
            flags.extend(crate::monitoring::exporter::agent_flag(&m.jar, self.exporter_port(id), &m.rules).ok());
        }
        flags
    }

    /// A node's JMX exporter (the Java agent's HTTP port, 127.0.0.1): brokers base+17..base+20,
    /// KRaft controllers base+21..base+23.
    pub fn exporter_port(&self, id: i32) -> u16 {
        if CONTROLLERS.contains(&id) {
            self.base_port + 21 + (id - CONTROLLERS[0]) as u16
        } else {
            self.base_port + 16 + id as u16
        }
    }

    /// The cluster's Prometheus server (base+24) and node_exporter (base+25).
    pub fn prometheus_ports(&self) -> (u16, u16) {
        (self.base_port + 24, self.base_port + 25)
    }

    pub(super) fn controller_port(&self, id: i32) -> u16 {
        self.base_port + 10 + (id - 100) as u16
    }

    pub(super) fn voters(&self) -> String {
        CONTROLLERS
            .iter()
            .map(|id| format!("{id}@127.0.0.1:{}", self.controller_port(*id)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Ports a cluster takes: base (ZooKeeper), +1..+4 brokers, +5..+8 broker JMX, +9 MULTI's fifth
/// broker, +11..+13 KRaft controllers, +14..+16 controller JMX, +17..+20 broker and +21..+23
/// controller JMX exporters, +24 Prometheus, +25 node_exporter (those last only with monitoring),
/// +26 never bound (PROM points the status job at it to find no broker there).
/// Ports one cluster claims (`--base-port` names the first; a run of N lanes takes N blocks).
pub const PORT_BLOCK: u16 = 27;

/// A block of `PORT_BLOCK` consecutive loopback ports, claimed: an exclusive lock on
/// `$TMPDIR/okp-port-blocks/<base>.lock`, held until the cluster is dropped. Probing
/// that the ports bind is not enough on its own when two clusters start at once
/// (`okp verify --all --jobs 2`, or two okp processes): both would find the same
/// block free before either binds it. The lock is `flock(2)`, so it goes with the
/// process however it ends.
pub struct PortBlock {
    pub base: u16,
    _lock: crate::fsx::FileLock,
}

impl PortBlock {
    /// Claims the block at `base` if no other cluster holds it and its ports all bind now.
    fn claim(base: u16) -> Option<PortBlock> {
        let dir = std::env::temp_dir().join("okp-port-blocks");
        crate::fsx::create_dir(&dir).ok()?;
        // Held, a link or not a regular file: not ours to take.
        let lock = crate::fsx::lock_file(&dir.join(format!("{base}.lock")), false, &mut |_| {}).ok()?.ok()?;
        let free = (0..PORT_BLOCK).all(|i| TcpListener::bind(("127.0.0.1", base + i)).is_ok());
        free.then_some(PortBlock { base, _lock: lock })
    }
}

/// A block of `PORT_BLOCK` consecutive loopback ports that all bind and no other okp
/// cluster holds. A requested base must be wholly free (another cluster there
/// would answer our tools); without one, the search starts at an offset derived
/// from the process id, so two okp runs started together rarely probe the same
/// block first (and the lock settles it when they do).
pub(super) fn free_port_block(requested: Option<u16>) -> Result<PortBlock> {
    if let Some(base) = requested {
        return base.checked_add(PORT_BLOCK).and_then(|_| PortBlock::claim(base)).ok_or_else(|| {
            Error::External(format!(
                "--base-port {base}: ports {base}..{} on 127.0.0.1 are not all free (another cluster?)",
                base.saturating_add(PORT_BLOCK - 1)
            ))
        });
    }
    // Blocks stay below the kernel's ephemeral range: a port in it can be taken as the source
    // port of any outgoing connection while its broker is down, and the restart then fails to
    // bind (seen on 3.7.2: "Port already in use" for a broker's JMX port at 34286).
    const FIRST: u16 = 20000;
    let ephemeral_low = ephemeral_low();
    let blocks = ephemeral_low.saturating_sub(FIRST) / 20;
    if blocks == 0 {
        return Err(Error::External(format!(
            "no room for a port block below the ephemeral range (it starts at {ephemeral_low}); pass --base-port"
        )));
    }
    let start = (std::process::id() % blocks as u32) as u16;
    for k in 0..blocks {
        if let Some(block) = PortBlock::claim(FIRST + 20 * ((start + k) % blocks)) {
            return Ok(block);
        }
    }
    Err(Error::External(format!(
        "no block of {PORT_BLOCK} free ports on 127.0.0.1 between {FIRST} and {ephemeral_low} (below the ephemeral range)"
    )))
}

/// The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), 32768 if unreadable.
fn ephemeral_low() -> u16 {
    crate::fsx::read::read_optional_text(
        std::path::Path::new("/proc/sys/net/ipv4/ip_local_port_range"),
        crate::fsx::read::MAX_TEXT,
    )
    .ok()
    .flatten()
    .and_then(|t| t.split_whitespace().next().and_then(|x| x.parse().ok()))
    .unwrap_or(32768)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two clusters started at once never get the same ports: a claimed block is not handed out
    /// again, by this process or another, until its holder lets go.
    #[test]
    fn a_claimed_port_block_is_not_handed_out_twice() {
        let first = free_port_block(None).unwrap();
        assert!(PortBlock::claim(first.base).is_none(), "block {} claimed twice", first.base);
        let second = free_port_block(None).unwrap();
        assert_ne!(second.base, first.base);
        assert!(free_port_block(Some(first.base)).is_err());
        let base = first.base;
        drop(first);
        assert!(PortBlock::claim(base).is_some(), "block {base} not released with its holder");
    }
}
