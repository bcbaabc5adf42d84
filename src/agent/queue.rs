//! pi's `PendingMessageQueue`: the Agent's steering and follow-up queues.

use crate::agent::message::AgentMessage;

/// How many queued messages one poll takes (pi's names: `"one-at-a-time"`, `"all"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    /// One message per poll (pi's default `"one-at-a-time"`).
    #[default]
    OneAtATime,
    /// Every queued message in one poll (`"all"`).
    All,
}

/// A FIFO of messages waiting for a loop poll point.
#[derive(Clone, Debug, Default)]
pub struct PendingQueue {
    pub mode: QueueMode,
    items: Vec<AgentMessage>,
}

impl PendingQueue {
    pub fn new(mode: QueueMode) -> Self {
        PendingQueue {
            mode,
            items: Vec::new(),
        }
    }

    pub fn enqueue(&mut self, message: AgentMessage) {
        self.items.push(message);
    }

    /// What the next drain would return, without consuming it.
    pub fn peek(&self) -> Vec<AgentMessage> {
        match self.mode {
            QueueMode::All => self.items.clone(),
            QueueMode::OneAtATime => self.items.first().cloned().into_iter().collect(),
        }
    }

    /// Takes what `peek` shows.
    pub fn drain(&mut self) -> Vec<AgentMessage> {
        let n = match self.mode {
            QueueMode::All => self.items.len(),
            QueueMode::OneAtATime => self.items.len().min(1),
        };
        self.items.drain(..n).collect()
    }

    /// Every queued message, in order, without consuming.
    pub fn all(&self) -> Vec<AgentMessage> {
        self.items.clone()
    }

    /// How many messages are queued.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes the message `distance` places from the tail (0 = the last queued), if it is still
    /// queued. Counted from the tail because polls drain from the front: a caller's mirror of
    /// the queue stays aligned with it at the tail.
    pub fn remove_from_end(&mut self, distance: usize) -> Option<AgentMessage> {
        let index = self.items.len().checked_sub(distance + 1)?;
        Some(self.items.remove(index))
    }

    pub fn clear(&mut self) {
        self.items.clear();
    }

    pub fn has_items(&self) -> bool {
        !self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::UserMessage;

    fn user(text: &str) -> AgentMessage {
        UserMessage {
            content: text.into(),
            timestamp: 1,
        }
        .into()
    }

    #[test]
    fn one_at_a_time_drains_singly_and_all_drains_everything() {
        let mut q = PendingQueue::new(QueueMode::OneAtATime);
        q.enqueue(user("a"));
        q.enqueue(user("b"));
        assert_eq!(q.peek(), vec![user("a")]);
        assert_eq!(q.drain().len(), 1);
        q.mode = QueueMode::All;
        q.enqueue(user("c"));
        assert_eq!(q.drain().len(), 2);
        assert!(!q.has_items());
    }

    #[test]
    fn remove_from_end_counts_from_the_tail() {
        let mut q = PendingQueue::new(QueueMode::OneAtATime);
        for t in ["a", "b", "c"] {
            q.enqueue(user(t));
        }
        assert_eq!(q.remove_from_end(1), Some(user("b")));
        assert_eq!(q.remove_from_end(2), None, "only two left");
        assert_eq!(q.all(), vec![user("a"), user("c")]);
        assert_eq!(q.remove_from_end(0), Some(user("c")));
    }
}
