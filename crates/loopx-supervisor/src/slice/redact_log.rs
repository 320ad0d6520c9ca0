//! Redacting a slice's log once the slice has ended.
//!
//! The PTY crate writes the agent's raw output to `.loopx/slices/<id>.log` (0600) as it comes.
//! An agent may print a credential (an `env` dump, a curl command): when the slice ends, the
//! log is rewritten with the same redaction the store applies — the built-in key patterns and
//! the values of loopx's secret-looking variables, of the profile's secrets and of every variable
//! the agent was not given (`contain::slice_redactor`). The rewrite is
//! atomic (a private temporary file renamed over the log) and happens only when something was
//! found. A log with invalid UTF-8 is redacted on its lossy text; it is a record for people.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use loopx_kernel::redact::Redactor;

/// Redacts `log` in place; returns whether anything was hidden.
pub(crate) fn redact_log(log: &Path, redactor: &Redactor) -> std::io::Result<bool> {
    let bytes = match std::fs::read(log) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&bytes);
    let redacted = redactor.redact(&text);
    if redacted == text {
        return Ok(false);
    }
    let tmp = log.with_extension("log.redacting");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(redacted.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, log)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_printed_key_is_hidden_and_a_clean_log_is_left_alone() {
        let dir = tempfile::tempdir().expect("dir");
        let log = dir.path().join("s1.log");
        std::fs::write(
            &log,
            "export ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\nok\n",
        )
        .expect("write");
        assert!(redact_log(&log, &Redactor::for_process_env(&[])).expect("redacts"));
        let text = std::fs::read_to_string(&log).expect("read");
        assert!(!text.contains("abcdefghijklmnop"), "{text}");
        assert!(text.ends_with("ok\n"), "{text}");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&log).expect("meta").permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            !redact_log(&log, &Redactor::for_process_env(&[])).expect("nothing left"),
            "idempotent"
        );
    }
}
