//! A damaged or busy store is a clear error, and loopx never rewrites the file it refused.

use crate::support::{Loopx, SOON, wait_for};

fn sha(path: &std::path::Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).expect("read")).to_vec()
}

/// Replaces the store with `bytes`, runs `status`, and checks exit 4, the message and that the
/// file is byte-for-byte what it was.
fn refused(name: &str, bytes: Vec<u8>) {
    let loopx = Loopx::with_work();
    let store = loopx.store_path();
    std::fs::write(&store, &bytes).expect("write");
    let before = sha(&store);
    let run = loopx.run(&["status"]);
    assert_eq!(run.code, 4, "{name}: {}", run.stderr);
    assert!(
        run.stderr.contains("loopx doctor"),
        "{name}: the message suggests doctor: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains(".loopx/state.redb"),
        "{name}: the message names the file: {}",
        run.stderr
    );
    insta::assert_snapshot!(name, loopx.stable(&run.stderr));
    let doctor = loopx.run(&["doctor"]);
    assert_eq!(
        doctor.code, 4,
        "{name}: doctor reports it: {}",
        doctor.stdout
    );
    assert_eq!(sha(&store), before, "{name}: the refused file is untouched");
    assert_eq!(
        std::fs::metadata(&store).expect("stat").len(),
        bytes.len() as u64
    );
}

#[test]
fn an_empty_store_is_refused_untouched() {
    refused("store_empty", Vec::new());
}

#[test]
fn a_garbage_store_is_refused_untouched() {
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let garbage = (0..64 * 1024)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng as u8
        })
        .collect();
    refused("store_garbage", garbage);
}

#[test]
fn a_truncated_store_is_refused_untouched() {
    let loopx = Loopx::with_work();
    let full = std::fs::read(loopx.store_path()).expect("read");
    for cut in [4096, full.len() / 2] {
        let mut bytes = full.clone();
        bytes.truncate(cut);
        let other = Loopx::with_work();
        let store = other.store_path();
        std::fs::write(&store, &bytes).expect("write");
        let run = other.run(&["status"]);
        assert_eq!(run.code, 4, "cut at {cut}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("state.redb"), "{}", run.stderr);
        assert_eq!(
            std::fs::read(&store).expect("read"),
            bytes,
            "cut at {cut}: untouched"
        );
    }
}

#[test]
fn a_missing_store_is_refused() {
    let loopx = Loopx::with_work();
    std::fs::remove_file(loopx.store_path()).expect("rm");
    let run = loopx.run(&["todo", "list"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    insta::assert_snapshot!("store_missing", loopx.stable(&run.stderr));
    assert!(!loopx.store_path().exists(), "no silent fresh database");
}

#[test]
fn a_busy_store_makes_writers_wait_then_names_the_holder() {
    let loopx = Loopx::with_work();
    let db = redb::Builder::new()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open(loopx.store_path())
        .expect("open the store like a peer would");
    let txn = db.begin_write().expect("hold the writer lock");
    // Reads never wait for a writer.
    let status = loopx.run_env(&["status", "--json"], &[("LOOPX_STORE_WAIT_MS", "300")]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    let add = loopx.run_env(
        &["todo", "add", "Blocked write"],
        &[("LOOPX_STORE_WAIT_MS", "300")],
    );
    assert_eq!(add.code, 4, "{}", add.stderr);
    assert!(add.stderr.contains("stayed busy"), "{}", add.stderr);
    assert!(
        add.stderr.contains(&format!("pid {}", std::process::id())),
        "names the holder: {}",
        add.stderr
    );
    assert!(
        !add.stderr.contains("already open"),
        "never `database already open`: {}",
        add.stderr
    );
    // Released within the wait: the writer gets through.
    let waiting = loopx
        .command(&["todo", "add", "Queued write"])
        .env("LOOPX_STORE_WAIT_MS", "5000")
        .spawn()
        .expect("spawn");
    // Once it has the store open it is trying to write: then the holder lets go.
    let store = loopx.store_path();
    wait_for("the queued writer to open the store", SOON, || {
        has_open(waiting.id(), &store)
    });
    drop(txn);
    let out = waiting.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Random damage (flipped bytes, zeroed pages, from a fixed seed) never makes a command panic:
/// each one ends with a result or a clear error naming the store, and `loopx doctor` (read-only
/// without `--repair`) leaves the file byte for byte as it was, healthy or not.
#[test]
fn damaged_stores_give_clear_errors_and_doctor_only_reads() {
    let loopx = Loopx::with_work();
    let healthy = std::fs::read(loopx.store_path()).expect("the store");
    let before = sha(&loopx.store_path());
    loopx.ok(&["doctor"]);
    assert_eq!(
        sha(&loopx.store_path()),
        before,
        "doctor wrote to a healthy store"
    );

    let mut seed: u64 = 0x5eed_1005;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let mut errors = 0;
    for case in 0..40 {
        let mut bytes = healthy.clone();
        for _ in 0..1 + next() % 4 {
            if next() % 2 == 0 {
                let at = usize::try_from(next()).expect("fits") % bytes.len();
                bytes[at] ^= u8::try_from(1 + next() % 255).expect("fits");
            } else {
                let pages = bytes.len().div_ceil(4096);
                let start = (usize::try_from(next()).expect("fits") % pages) * 4096;
                let end = (start + 4096).min(bytes.len());
                bytes[start..end].fill(0);
            }
        }
        std::fs::write(loopx.store_path(), &bytes).expect("write the damage");
        let damaged = sha(&loopx.store_path());
        loopx.run(&["doctor"]);
        assert_eq!(
            sha(&loopx.store_path()),
            damaged,
            "case {case}: doctor wrote"
        );
        for args in [
            &["doctor"][..],
            &["status"],
            &["todo", "list"],
            &["log"],
            &["todo", "add", "After the damage"],
        ] {
            let run = loopx.run(args);
            assert!(
                !run.stderr.contains("panicked") && run.code != 101,
                "case {case}: {args:?} panicked: {}",
                run.stderr
            );
            if run.code != 0 {
                errors += 1;
                assert!(
                    [3, 4].contains(&run.code)
                        && (run.stderr.contains("state.redb") || run.stdout.contains("state.redb")),
                    "case {case}: {args:?} exit {}: {}",
                    run.code,
                    run.stderr
                );
            }
        }
    }
    assert!(errors > 0, "some damage was found");
}

/// Whether process `pid` has `path` open: its `/proc/<pid>/fd` on Linux, `lsof` where there is
/// no `/proc` to ask (macOS).
fn has_open(pid: u32, path: &std::path::Path) -> bool {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    if !cfg!(target_os = "linux") {
        let out = std::process::Command::new("lsof")
            .args(["-Fn", "-p", &pid.to_string()])
            .output()
            .expect("lsof, to see a process's open files where there is no /proc");
        let names = String::from_utf8_lossy(&out.stdout);
        return names
            .lines()
            .any(|line| line.strip_prefix('n') == path.to_str());
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
}
