//! A planned change as the operator reads it before anything is written: the order, then each
//! node's file old → new and how it is written.
//!
//! Not here: making the plan (`super`), the refusals' notes (`super::run`).

use super::{Direction, Prepared};
use crate::observers::actuate::quoted;
use crate::observers::idfile;
use crate::observers::transport::{NodeRole, Transport};

impl Prepared {
    /// The plan as printed: the order, then each node's file old → new and how it is written.
    pub fn plan(&self, transport: &Transport) -> String {
        let verb = self.direction.verb();
        let order = if self.edits.iter().all(|e| e.node.role == NodeRole::Broker) {
            "no KRaft controllers listed: brokers in id order"
        } else if self.direction == Direction::Promote {
            "KRaft controllers first, then brokers"
        } else {
            "brokers first, then KRaft controllers"
        };
        let mut plan = if self.broker < 0 {
            format!(
                "plan: {} ({order}); {} node(s) change, {} already agree\n",
                match &self.topic {
                    Some(t) => format!("write topic {}'s rule in observer.ids", crate::escape::one_line(t)),
                    None => "write observer.ids".to_string(),
                },
                self.changing(),
                self.edits.len() - self.changing()
            )
        } else {
            format!(
                "plan: {verb} broker {} ({} it {} {}; {order}); {} node(s) change, {} already agree\n",
                self.broker,
                if self.direction == Direction::Promote { "remove" } else { "add" },
                if self.direction == Direction::Promote { "from" } else { "to" },
                match &self.topic {
                    Some(t) => format!("topic {}'s rule in observer.ids", crate::escape::one_line(t)),
                    None => "observer.ids".to_string(),
                },
                self.changing(),
                self.edits.len() - self.changing()
            )
        };
        for e in &self.edits {
            if e.before == e.after {
                plan.push_str(&format!("  {}: unchanged {}\n", e.node.label(), summary(&e.before)));
            } else {
                plan.push_str(&format!(
                    "  {}: {} → {} ({} → {}) by {}\n",
                    e.node.label(),
                    summary(&e.before),
                    summary(&e.after),
                    quoted(&e.before),
                    quoted(&e.after),
                    transport.describe_write(&e.node)
                ));
            }
        }
        plan
    }
}

/// A file's cluster-wide ids, then its topic rules when it has any: `[4] topic:tfull=none`.
fn summary(text: &str) -> String {
    match idfile::rules(text) {
        Ok(r) if !r.is_empty() => {
            format!("{} {}", idfile::show(&idfile::parse(text)), crate::escape::one_line(&r.shown()))
        }
        _ => idfile::show(&idfile::parse(text)),
    }
}
