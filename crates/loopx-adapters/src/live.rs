//! Input to a CLI while it runs: Claude Code's stream-json input (`prompt.delivery =
//! "stream-json"`, `docs/design/live-messages.md`). The prompt is the first line on the agent's
//! stdin (a pipe), a person's message a later one; each is one JSON object on one line, with a
//! `uuid` the CLI echoes back (`--replay-user-messages`) at the moment it uses the line, which
//! is how loopx knows a message reached the agent ([`crate::AgentEvent::InputUsed`]).

use serde_json::json;

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

/// The `uuid` of input number `n` of a slice (0: the prompt; then a message's number), in
/// the UUID shape the CLI expects. `nonce` keeps two projects' slices of the same number (and
/// a resumed session's earlier lines) apart.
pub fn input_uuid(slice: u64, nonce: u32, n: u64) -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        slice & 0xffff_ffff,
        (slice >> 32) & 0xffff,
        nonce & 0xfff,
        (nonce >> 12) & 0xfff,
        n & 0xffff_ffff_ffff
    )
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
    fn uuids_have_the_uuid_shape_and_differ_per_input_slice_and_nonce() {
        let a = input_uuid(7, 0xabc_def, 0);
        assert_eq!(a, "00000007-0000-4def-8abc-000000000000");
        let shape = |u: &str| {
            u.split('-').map(str::len).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
                && u.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        };
        assert!(shape(&a) && shape(&input_uuid(u64::MAX, u32::MAX, u64::MAX)));
        assert_ne!(a, input_uuid(7, 0xabc_def, 1));
        assert_ne!(a, input_uuid(8, 0xabc_def, 0));
        assert_ne!(a, input_uuid(7, 0xabc_dee, 0));
    }
}
