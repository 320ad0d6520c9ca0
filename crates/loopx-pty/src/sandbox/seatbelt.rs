//! The Seatbelt profile for a [`Sandbox`]: the same rules `docs/permissions.md` states for
//! Linux, written in Apple's Sandbox Profile Language for `sandbox-exec -p`.
//!
//! Pure text generation, compiled and tested on every platform; only `macos.rs` applies it.
//! In SBPL the *last* rule that matches an operation decides, so the profile goes from broad
//! to narrow: everything a user's program may do, then no writes but beneath `writable`, then
//! nothing at all of `hide` and of the other slices' rooms, then back what lies beneath those
//! (`keep`, the slice's own room, writable paths inside them), then no writes to `read_only`
//! paths whatever came before. Paths must already be resolved (`/tmp` is `/private/tmp` on
//! macOS, and Seatbelt matches the resolved path); `macos.rs` resolves them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Sandbox;

/// The profile, or the path that cannot be written into one (not UTF-8: a rule for a
/// different path would silently not hold). `terminal` is the slice's own terminal device.
pub(super) fn profile(sandbox: &Sandbox, terminal: Option<&Path>) -> Result<String, String> {
    let mut out = String::from(
        "(version 1)\n\
         ; loopx: one slice's sandbox (docs/permissions.md). The last matching rule decides.\n\
         ; What any program of the user's may do: read, run programs, use the network.\n\
         (allow default)\n",
    );
    out.push_str("; Writes only beneath the slice's writable paths.\n(deny file-write*)\n");
    rule(&mut out, "allow file-write*", &sandbox.writable)?;
    // Terminals the slice opens itself carry the pty extension; its own terminal is named.
    // Every other terminal of the person's is neither read nor written.
    out.push_str(
        "; No other terminal of the person's: not read, not written.\n\
         (deny file-read* file-write* (regex #\"^/dev/ttys[0-9]+$\"))\n\
         (allow file-read* file-write* (require-all (regex #\"^/dev/ttys[0-9]+$\") (extension \"com.apple.sandbox.pty\")))\n",
    );
    if let Some(tty) = terminal {
        let _ = writeln!(
            out,
            "(allow file-read* file-write* (literal {}))",
            quoted(tty)?
        );
    }
    let mut closed: Vec<PathBuf> = sandbox.hide.clone();
    let mut reopened: Vec<PathBuf> = sandbox.keep.clone();
    let mut room: Vec<PathBuf> = Vec::new();
    if let Some(own) = &sandbox.private_room {
        if let Some(parent) = own.parent() {
            closed.push(parent.to_owned());
        }
        reopened.push(own.clone());
        room.push(own.clone());
    }
    // `file*` takes in hard links and clones, which would copy a hidden file out; a Unix
    // socket's `connect` is `network-outbound` on its path (a tmux or Docker socket would run
    // a command outside the slice).
    out.push_str(
        "; Hidden: loopx's state, the user's daemons' sockets, other slices' rooms. Nothing of\n\
         ; them: not read, written, linked, cloned, nor connected to.\n",
    );
    rule(&mut out, "deny file*", &closed)?;
    rule(&mut out, "deny network-outbound", &closed)?;
    out.push_str(
        "; Back beneath them: the slice's own worktree and room, and their ancestors' metadata.\n",
    );
    rule(&mut out, "allow file-read*", &reopened)?;
    literals(
        &mut out,
        "allow file-read-metadata",
        &ancestors(&closed, &reopened),
    )?;
    let beneath: Vec<PathBuf> = sandbox
        .writable
        .iter()
        .filter(|w| closed.iter().any(|c| w.starts_with(c)))
        .filter(|w| {
            // Writable only where it can also be seen: inside a kept directory or the room.
            reopened.iter().any(|r| w.starts_with(r))
        })
        .cloned()
        .collect();
    rule(&mut out, "allow file*", &beneath)?;
    // The report channel's socket is in the room.
    rule(&mut out, "allow network-outbound", &room)?;
    out.push_str("; Never written, whatever came before: what would run code outside the slice.\n");
    rule(&mut out, "deny file-write*", &sandbox.read_only)?;
    out.push_str(
        "; No way out through launchd: no jobs submitted, no apps opened, no Apple events.\n\
         (deny job-creation)\n\
         (deny lsopen)\n\
         (deny appleevent-send)\n\
         ; Signals and inspection only within the slice.\n\
         (deny signal)\n\
         (allow signal (target same-sandbox))\n\
         (deny process-info*)\n\
         (allow process-info* (target same-sandbox))\n",
    );
    Ok(out)
}

/// The directories between a closed path and a reopened one beneath it (the closed one
/// included): their metadata must stay readable, or tools that resolve a path component by
/// component (git, `realpath`) fail on the reopened one.
fn ancestors(closed: &[PathBuf], reopened: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for r in reopened {
        for c in closed.iter().filter(|c| r.starts_with(c) && *c != r) {
            for a in r.ancestors().skip(1).take_while(|a| a.starts_with(c)) {
                if !found.iter().any(|f| f == a) {
                    found.push(a.to_owned());
                }
            }
        }
    }
    found
}

/// One rule over `paths` (nothing when there are none), each as a `subpath`: the path itself
/// and everything beneath it.
fn rule(out: &mut String, head: &str, paths: &[PathBuf]) -> Result<(), String> {
    rule_with(out, head, "subpath", paths)
}

/// One rule over exactly these `paths` (`literal`), nothing beneath them.
fn literals(out: &mut String, head: &str, paths: &[PathBuf]) -> Result<(), String> {
    rule_with(out, head, "literal", paths)
}

fn rule_with(out: &mut String, head: &str, filter: &str, paths: &[PathBuf]) -> Result<(), String> {
    if paths.is_empty() {
        return Ok(());
    }
    let _ = write!(out, "({head}");
    for path in paths {
        let _ = write!(out, "\n  ({filter} {})", quoted(path)?);
    }
    out.push_str(")\n");
    Ok(())
}

/// `path` as an SBPL string literal.
fn quoted(path: &Path) -> Result<String, String> {
    let text = path.to_str().ok_or_else(|| {
        format!(
            "{} is not UTF-8, and a Seatbelt rule needs text",
            path.display()
        )
    })?;
    if text.contains(['\n', '\r', '\0']) {
        return Err(format!("{text:?} holds a line break or NUL"));
    }
    Ok(format!(
        "\"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worktree goal's slice, as `contain.rs` builds it.
    fn slice() -> Sandbox {
        Sandbox {
            seatbelt: true,
            hide: vec!["/p/.loopx".into(), "/private/tmp/tmux-501".into()],
            keep: vec!["/p/.loopx/worktrees/t1".into()],
            read_only: vec!["/p/.git/config".into(), "/p/.git/hooks".into()],
            private_room: Some("/private/tmp/loopx-501/s1.ab".into()),
            writable: vec![
                "/p/.loopx/worktrees/t1".into(),
                "/private/tmp/loopx-501/s1.ab/tmp".into(),
                "/dev/null".into(),
                "/Users/u/.claude".into(),
            ],
            ..Sandbox::default()
        }
    }

    /// Decides `op` on `path` as Seatbelt would for the rules this generator writes: the last
    /// rule naming the operation whose subpath holds `path` wins; `(allow default)` otherwise.
    fn decide(profile: &str, op: &str, path: &str) -> bool {
        let mut allowed = true;
        let mut rules = profile.split("\n(").map(|r| r.trim_start_matches('('));
        for rule in &mut rules {
            let (verdict, rest) = match rule.split_once(' ') {
                Some(("allow", rest)) => (true, rest),
                Some(("deny", rest)) => (false, rest),
                _ => continue,
            };
            let ops = rest
                .split(" (")
                .next()
                .unwrap_or("")
                .split_once('\n')
                .map_or(rest.split(" (").next().unwrap_or(""), |(ops, _)| ops);
            let names_op = ops
                .split_whitespace()
                .map(|o| o.trim_end_matches(')'))
                .any(|o| o == op || (o.ends_with('*') && op.starts_with(o.trim_end_matches('*'))));
            if !names_op || rule.contains("regex") || rule.contains("target") {
                continue;
            }
            let filters = |kind: &str| -> Vec<&str> {
                rule.split(&format!("({kind} \""))
                    .skip(1)
                    .filter_map(|s| s.split('"').next())
                    .collect()
            };
            let (subpaths, literals) = (filters("subpath"), filters("literal"));
            let matches = if subpaths.is_empty() && literals.is_empty() {
                // `(deny file-write*)`: the operation everywhere.
                true
            } else {
                subpaths
                    .iter()
                    .any(|s| Path::new(path).starts_with(Path::new(s)))
                    || literals.contains(&path)
            };
            if matches {
                allowed = verdict;
            }
        }
        allowed
    }

    #[test]
    fn the_profile_keeps_the_promises_of_the_permissions_page() {
        let p = profile(&slice(), None).expect("profile");
        let read = |path| decide(&p, "file-read-data", path);
        let write = |path| decide(&p, "file-write-data", path);
        // Reading is not restricted: compilers, libraries, the user's tools.
        assert!(read("/usr/lib/libc.dylib") && read("/Users/u/src/other"));
        // Writes only beneath `writable`.
        assert!(write("/p/.loopx/worktrees/t1/src/main.rs"));
        assert!(write("/private/tmp/loopx-501/s1.ab/tmp/x") && write("/dev/null"));
        assert!(write("/Users/u/.claude/session.json"));
        assert!(!write("/p/src/main.rs"), "the person's own tree");
        assert!(!write("/Users/u/.zshrc") && !write("/etc/hosts"));
        // `.loopx/` is neither read nor written, but the slice's worktree beneath it is.
        assert!(!read("/p/.loopx/store.redb") && !write("/p/.loopx/loopx.toml"));
        assert!(!read("/p/.loopx/worktrees/t2/secret") && !write("/p/.loopx/worktrees/t2/x"));
        assert!(read("/p/.loopx/worktrees/t1/README"));
        // Nothing of a hidden path comes out by a hard link or a clone either.
        assert!(!decide(&p, "file-link", "/p/.loopx/store.redb"));
        assert!(!decide(&p, "file-clone", "/p/.loopx/store.redb"));
        // The way to the kept worktree can be walked (its ancestors' metadata), not listed.
        assert!(decide(&p, "file-read-metadata", "/p/.loopx"));
        assert!(decide(&p, "file-read-metadata", "/p/.loopx/worktrees"));
        assert!(!read("/p/.loopx/worktrees"), "the peers' names stay hidden");
        assert!(!decide(&p, "file-read-metadata", "/p/.loopx/store.redb"));
        // The worktree is the slice's own: cargo may hard-link in its target directory.
        assert!(decide(
            &p,
            "file-link",
            "/p/.loopx/worktrees/t1/target/debug/x"
        ));
        // The user's daemons' sockets: not read, not connected to.
        assert!(!read("/private/tmp/tmux-501/default"));
        assert!(!decide(
            &p,
            "network-outbound",
            "/private/tmp/tmux-501/default"
        ));
        assert!(decide(
            &p,
            "network-outbound",
            "/private/tmp/loopx-501/s1.ab/report.sock"
        ));
        assert!(!decide(
            &p,
            "network-outbound",
            "/private/tmp/loopx-501/s2.cd/report.sock"
        ));
        assert!(
            decide(&p, "network-outbound", "/private/tmp/other.sock"),
            "the network is open"
        );
        // Another slice's room, not this one's.
        assert!(
            !read("/private/tmp/loopx-501/s2.cd/prompt")
                && !write("/private/tmp/loopx-501/s2.cd/tmp/x")
        );
        assert!(read("/private/tmp/loopx-501/s1.ab/prompt"));
        assert!(
            !write("/private/tmp/loopx-501/s1.ab/prompt"),
            "only its tmp is writable"
        );
        // Git's config and hooks are never written, even inside a writable tree.
        let mut whole_tree = slice();
        whole_tree.writable.push("/p".into());
        let q = profile(&whole_tree, None).expect("profile");
        assert!(decide(&q, "file-write-data", "/p/src/main.rs"));
        assert!(!decide(&q, "file-write-create", "/p/.git/hooks/pre-commit"));
        assert!(!decide(&q, "file-write-data", "/p/.git/config"));
        assert!(
            !decide(&q, "file-read-data", "/p/.loopx/store.redb"),
            "hidden stays hidden"
        );
        // Signals and inspection stay within the slice; other terminals are closed.
        assert!(p.contains("(deny signal)\n(allow signal (target same-sandbox))"));
        assert!(p.contains("(deny process-info*)\n(allow process-info* (target same-sandbox))"));
        assert!(p.contains("(deny file-read* file-write* (regex #\"^/dev/ttys[0-9]+$\"))"));
        assert!(p.contains("(deny job-creation)\n(deny lsopen)\n(deny appleevent-send)"));
        // The slice's own terminal is named after the rule that closes all of them.
        let own = profile(&slice(), Some(Path::new("/dev/ttys007"))).expect("profile");
        let closed = own
            .find("(deny file-read* file-write* (regex")
            .expect("closed");
        let named = own
            .find("(allow file-read* file-write* (literal \"/dev/ttys007\"))")
            .expect("named");
        assert!(named > closed, "{own}");
    }

    #[test]
    fn the_rules_come_in_the_order_that_makes_them_hold() {
        let p = profile(&slice(), None).expect("profile");
        let at = |needle: &str| p.find(needle).unwrap_or_else(|| panic!("{needle} in\n{p}"));
        assert!(at("(allow default)") < at("(deny file-write*)"));
        assert!(at("(deny file-write*)") < at("(allow file-write*"));
        assert!(at("(deny file*\n") > at("(allow file-write*"));
        assert!(at("(deny network-outbound\n") > at("(allow file-write*"));
        assert!(at("(allow file-read*\n") > at("(deny file*\n"));
        assert!(at("(allow file-read-metadata\n") > at("(deny file*\n"));
        assert!(at("(allow file*\n") > at("(deny file*\n"));
        assert!(at("(allow network-outbound\n") > at("(deny network-outbound\n"));
        assert!(p.rfind("(deny file-write*\n").expect("read-only rule") > at("(allow file*\n"));
    }

    #[test]
    fn paths_are_quoted_and_odd_ones_refused() {
        let mut sandbox = slice();
        sandbox.writable = vec![r#"/p/a "b" \c"#.into()];
        let p = profile(&sandbox, None).expect("profile");
        assert!(p.contains(r#"(subpath "/p/a \"b\" \\c")"#), "{p}");
        sandbox.writable = vec!["/p/line\nbreak".into()];
        assert!(profile(&sandbox, None).is_err());
        use std::os::unix::ffi::OsStrExt;
        sandbox.writable = vec![PathBuf::from(std::ffi::OsStr::from_bytes(b"/p/\xff"))];
        let err = profile(&sandbox, None).expect_err("not UTF-8");
        assert!(err.contains("not UTF-8"), "{err}");
    }

    #[test]
    fn a_read_only_slice_writes_nothing_of_its_tree() {
        let mut sandbox = slice();
        sandbox.writable.retain(|w| !w.starts_with("/p"));
        let p = profile(&sandbox, None).expect("profile");
        assert!(!decide(
            &p,
            "file-write-data",
            "/p/.loopx/worktrees/t1/src/main.rs"
        ));
        assert!(decide(
            &p,
            "file-read-data",
            "/p/.loopx/worktrees/t1/src/main.rs"
        ));
    }
}
