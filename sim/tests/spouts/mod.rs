//! Spouts the simulator's tests share (`mod spouts;` in a test file).
#![allow(dead_code)]

use acker_runtime::{values, MessageId, Spout, SpoutOutputCollector};

/// Emits 0..4 (message id = value) once each, re-emits an id on fail; done when 4 acks came.
#[derive(Default)]
pub struct Four {
    next: u64,
    replay: Vec<MessageId>,
    acked: u64,
}

impl Spout for Four {
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector<'_>) {
        let id = match self.replay.pop() {
            Some(id) => id,
            None if self.next < 4 => {
                self.next += 1;
                self.next - 1
            }
            None => return,
        };
        let _ = c.emit(values![id as i64], Some(id));
    }
    fn ack(&mut self, _id: MessageId) {
        self.acked += 1;
    }
    fn fail(&mut self, id: MessageId) {
        self.replay.push(id);
    }
    fn is_done(&self) -> bool {
        self.acked == 4
    }
}
