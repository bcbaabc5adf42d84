//! pi's `PendingMessageQueue`: the Agent's steering and follow-up queues.

use crate::agent::message::AgentMessage;

/// How many queued messages one poll takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
}
