//! Input to a CLI while it runs: Claude Code's stream-json input (`prompt.delivery =
//! "stream-json"`, `docs/design/live-messages.md`). The prompt is the first line on the agent's
//! stdin (a pipe), a person's message a later one; each is one JSON object on one line, with a
//! `uuid` the CLI echoes back (`--replay-user-messages`) at the moment it uses the line, which
//! is how loopx knows a message reached the agent ([`crate::AgentEvent::InputUsed`]).

use serde_json::{Value, json};

/// The flags of Claude Code's that live input needs and `args` lacks: loopx writes stream-json
/// lines (`--input-format stream-json`), and knows one was used by its echo
/// (`--replay-user-messages`). Without the first Claude would take the line as the prompt's
/// text; without the second every message would wait for its echo in vain.
/// Read as Claude reads its command line: only what comes before a `--` is a flag, and the
/// last `--input-format` wins.
pub fn missing_flags(args: &[String]) -> Vec<&'static str> {
    let flags = args.split(|a| a == "--").next().unwrap_or_default();
    let mut format = flags
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a.as_str() {
            "--input-format" => flags.get(i + 1).map(String::as_str),
            other => other.strip_prefix("--input-format="),
        });
    let input = format.next_back() == Some("stream-json");
    let echo = flags.iter().any(|a| a == "--replay-user-messages");
    let mut missing = Vec::new();
    if !input {
        missing.push("--input-format stream-json");
    }
    if !echo {
        missing.push("--replay-user-messages");
    }
    missing
}

/// One user turn as a stdin line: the JSON object and its newline. JSON escapes every newline
/// and control character inside `text`, so the line cannot be split or cut short.
pub fn user_line(text: &str, uuid: &str) -> Vec<u8> {
    let line = json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        "uuid": uuid,
        "parent_tool_use_id": null,
        "session_id": "",
    });
    let mut bytes = serde_json::to_vec(&line).expect("a JSON value serializes");
    bytes.push(b'\n');
    bytes
}

/// The `uuid` of the input line this stream event says the CLI used: an echo
/// (`"isReplay": true`) with a `timestamp`. An echo without one is of a line the CLI skipped
/// (its uuid was used before), not used.
pub fn used_echo(event: &Value) -> Option<&str> {
    let replay = event.get("isReplay").and_then(Value::as_bool) == Some(true);
    let used = replay && event.get("timestamp").is_some();
    used.then(|| event.get("uuid").and_then(Value::as_str))
        .flatten()
}

/// A `uuid` for one input line: 122 random bits in the UUID shape (version 4), drawn from
/// the operating system. Only loopx knows it until the line is written, so an agent that never
/// read a line cannot echo it to have it counted as read.
pub fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    fill_random(&mut bytes);
    uuid_v4(bytes)
}

/// `bytes` in the shape of a version-4 UUID (the version and variant bits set), as Claude's
/// session ids and event uuids look.
pub fn uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Random bytes from `/dev/urandom`; should it be unreadable, from the standard library's
/// randomly keyed hasher, which is seeded from the operating system too.
fn fill_random(bytes: &mut [u8; 16]) {
    use std::io::Read;
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(bytes));
    if read.is_err() {
        use std::hash::BuildHasher;
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let word = std::collections::hash_map::RandomState::new().hash_one((time, i));
            chunk.copy_from_slice(&word.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_one_json_object_whatever_the_text_holds() {
        let text = "two\nlines, a \"quote\", a \u{1b}[31m escape and 300 KiB:".to_owned()
            + &"x".repeat(300 * 1024);
        let line = user_line(&text, "u");
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        assert_eq!(line.last(), Some(&b'\n'));
        let back: serde_json::Value = serde_json::from_slice(&line).expect("json");
        assert_eq!(back["message"]["content"][0]["text"], text.as_str());
        assert_eq!(back["uuid"], "u");
        assert_eq!(back["type"], "user");
    }

    #[test]
    fn the_flags_count_as_claude_reads_them() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let both = ["--input-format", "stream-json", "--replay-user-messages"];
        assert!(missing_flags(&args(&both)).is_empty());
        assert!(
            missing_flags(&args(&[
                "--input-format=stream-json",
                "--replay-user-messages"
            ]))
            .is_empty()
        );
        // A later `--input-format` wins; after `--` nothing is a flag.
        let overridden = [&both[..], &["--input-format", "text"]].concat();
        assert_eq!(
            missing_flags(&args(&overridden)),
            ["--input-format stream-json"]
        );
        let after = [
            "--input-format",
            "stream-json",
            "--",
            "--replay-user-messages",
        ];
        assert_eq!(missing_flags(&args(&after)), ["--replay-user-messages"]);
        assert_eq!(missing_flags(&args(&["-p"])).len(), 2);
    }

    #[test]
    fn uuids_have_the_uuid_shape_and_never_repeat() {
        let shape = |u: &str| {
            u.split('-').map(str::len).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
                && u.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
                && u.as_bytes()[14] == b'4'
        };
        let drawn: std::collections::BTreeSet<String> = (0..1000).map(|_| random_uuid()).collect();
        assert_eq!(drawn.len(), 1000);
        assert!(drawn.iter().all(|u| shape(u)), "{drawn:?}");
    }
}
