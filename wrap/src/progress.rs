//! Progress notes while a person decides, so a harness that resets its timeout on progress keeps waiting (and so
//! does a server that timed its own question).

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};

use crate::relay_state::Lines;

/// The progress notes one wait keeps sending. Stopping them waits for a note being written, so no note can
/// follow the reply that ends the wait.
#[derive(Default)]
pub(crate) struct Progress {
    stopped: Arc<Mutex<bool>>,
}

impl Progress {
    /// Tells one side (the harness about its call, or the server about its question), every `every`, that a
    /// person is still deciding: `notifications/progress` continuing `counter` (so strictly increasing for the
    /// token), for as long as the wait lasts and the request the notes name is `open`.
    pub(crate) fn keep_alive(
        &self,
        token: Value,
        to: Lines,
        every: Duration,
        counter: &Arc<AtomicU64>,
        open: Option<Arc<AtomicBool>>,
    ) {
        let stopped = Arc::clone(&self.stopped);
        let counter = Arc::clone(counter);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                ticks.tick().await;
                if open
                    .as_ref()
                    .is_some_and(|open| !open.load(Ordering::Relaxed))
                {
                    return;
                }
                // Written under the lock `stop` takes: a note is either before the reply or never.
                let Ok(stopped) = stopped.lock() else { return };
                if *stopped {
                    return;
                }
                let progress = counter.fetch_add(1, Ordering::Relaxed) + 1;
                let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                    "progressToken": token,
                    "progress": progress,
                    "message": "Waiting for a person to answer in Anteroom",
                }});
                if to.send(note.to_string()).is_err() {
                    return;
                }
            }
        });
    }

    pub(crate) fn stop(&self) {
        if let Ok(mut stopped) = self.stopped.lock() {
            *stopped = true;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}
