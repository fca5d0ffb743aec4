//! A harness's configuration file (Claude Code's `.mcp.json`, Codex's `config.toml`) rewritten by
//! `anteroom mcp-config`: inject, wrap and unwrap, on any text. The installers crate is pure text in, text out,
//! with no Anteroom dependency, so the fuzzer need not build the whole server.
#![no_main]

use anteroom_installers::{Change, Format, rewrite};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Rewrite {
    toml: bool,
    text: String,
    change: u8,
    block: Vec<(String, String)>,
    dotenv: String,
    only: Vec<String>,
}

fuzz_target!(|input: Rewrite| {
    let format = if input.toml {
        Format::Toml
    } else {
        Format::Json
    };
    let change = match input.change % 3 {
        0 => Change::Inject {
            block: input.block,
            dotenv: anteroom_installers::parse_dotenv(&input.dotenv),
        },
        1 => Change::Wrap {
            program: "anteroom".to_owned(),
        },
        _ => Change::Unwrap,
    };
    if let Ok(once) = rewrite(format, &input.text, &change, &input.only) {
        // A second run of the same change changes nothing more (the command promises it).
        if let Ok(twice) = rewrite(format, &once, &change, &input.only) {
            assert_eq!(once, twice, "a second run changed the file again");
        }
    }
});
