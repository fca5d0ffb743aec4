//! What a harness or a wrapped server writes on a pipe, read by `anteroom wrap`: the line reader (any bytes,
//! any chunking) and the classifier of each line it parses.
#![no_main]

use anteroom_wrap::{
    jsonrpc::{classify, needs_input},
    relay::{Read, next_line},
};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tokio::io::BufReader;

#[derive(Arbitrary, Debug)]
struct Pipe {
    /// The reader's buffer size: lines arrive split at every boundary.
    capacity: u8,
    bytes: Vec<u8>,
}

fuzz_target!(|pipe: Pipe| {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    runtime.block_on(async {
        let mut reader =
            BufReader::with_capacity(usize::from(pipe.capacity).max(1), pipe.bytes.as_slice());
        let mut line = Vec::new();
        let mut total = 0;
        while let Ok(Some(read)) = next_line(&mut reader, &mut line).await {
            if let Read::Line = read {
                total += line.len() + 1;
                assert!(!line.contains(&b'\n'), "a line holds no newline");
                if let Ok(message) = serde_json::from_slice(&line) {
                    let _ = classify(&message);
                    let _ = needs_input(&message);
                }
            }
        }
        assert!(total <= pipe.bytes.len() + 1, "read more than was written");
    });
});
