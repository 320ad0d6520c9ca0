//! Helpers shared by the PTY tests: fixture paths, specs, deadline-bounded waits, /proc checks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use loopx_pty::{LaunchSpec, SliceEvent, SliceEvents, SliceId};
use loopx_vocab::clean_text;

/// Generous bound for anything that should take milliseconds; CI has 2 shared cores.
pub const DEADLINE: Duration = Duration::from_secs(20);

pub fn agent(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/agents")
        .join(name)
}

pub fn exec_helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_loopx-pty-exec"))
}

/// A spec for a fixture agent with `PATH` allowed, a 1 s grace period and a log in `dir`.
pub fn spec(dir: &Path, script: &str, args: &[&str]) -> LaunchSpec {
    // Orphans must be re-parented to the test process so the sweep can reap them: PID 1 in
    // some sandboxes never reaps, which would leave every swept process a zombie.
    loopx_pty::become_child_subreaper().expect("become child subreaper");
    let id = format!(
        "t-{}-{}",
        script.trim_end_matches(".sh"),
        std::process::id()
    );
    let mut spec = LaunchSpec::new(
        SliceId::new(id).expect("valid id"),
        agent(script),
        dir,
        dir.join("slice.log"),
    );
    spec.args = args.iter().map(|arg| (*arg).into()).collect();
    spec.env.inherit = vec!["PATH".into()];
    spec.limits.grace = Duration::from_secs(1);
    spec
}

/// Collects events until the ANSI-stripped output contains `needle`; panics at the deadline.
/// Returns the text seen so far.
pub async fn wait_for_text(events: &mut SliceEvents, needle: &str) -> String {
    let mut raw = Vec::new();
    let found = tokio::time::timeout(DEADLINE, async {
        while let Some(event) = events.next().await {
            if let SliceEvent::Output(bytes) = event {
                raw.extend_from_slice(&bytes);
                let text = clean_text(&raw);
                if text.contains(needle) {
                    return Some(text);
                }
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(text)) => text,
        Ok(None) => panic!(
            "slice ended before printing {needle:?}: {:?}",
            clean_text(&raw)
        ),
        Err(_) => panic!("no {needle:?} within {DEADLINE:?}: {:?}", clean_text(&raw)),
    }
}

/// Every `key=<pid>` in `text`.
pub fn pids(text: &str, key: &str) -> Vec<u32> {
    let prefix = format!("{key}=");
    text.split(|c: char| c.is_whitespace())
        .filter_map(|word| word.strip_prefix(&prefix)?.parse().ok())
        .collect()
}

/// True if `/proc/<pid>` exists in any state, zombies included.
pub fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Asserts none of `pids` exists any more (not even as a zombie), allowing a short moment for
/// the kernel to finish tearing down killed processes.
pub async fn assert_all_gone(pids: &[u32]) {
    let gone = tokio::time::timeout(Duration::from_secs(5), async {
        while pids.iter().any(|&pid| exists(pid)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let left: Vec<_> = pids
        .iter()
        .filter(|&&pid| exists(pid))
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            format!("{pid}: {stat}")
        })
        .collect();
    assert!(
        gone.is_ok() && left.is_empty(),
        "processes survived the slice: {left:?}"
    );
}

/// Peak resident set of this process (each nextest test runs in its own process).
pub fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kib * 1024
}
