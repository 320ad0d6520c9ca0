//! Where loopx's own log goes: stderr for every command, and for `loopx run` also a file.
//!
//! The libraries emit `tracing` events (a slice log that could not be written, a report the
//! kernel refused, a claim lost); the binary is the one place that decides where they go, so it
//! installs the one subscriber here, at the edge, before any command runs.
//!
//! - stderr: `LOOPX_LOG` (an `EnvFilter` string such as `debug` or `loopx_supervisor=trace`)
//!   when set, else `warn` (`error` for `loopx sim`, whose injected faults warn by design),
//!   raised by `-v` (info), `-vv` (debug), `-vvv` (trace).
//! - `loopx run` (and `run --once`): `.loopx/logs/run-<UTC time>-<pid>.log`, one file per run,
//!   at `LOOPX_LOG` when set, else at least `info`; the newest 10 files are kept. Once that file
//!   is open, stderr takes no more of the log unless the person asked for it (`-v`, or
//!   `LOOPX_LOG`): the run prints its own lines for the person watching, and a warning a
//!   person must act on is one of them, in loopx's words (a refused item of a report is part
//!   of its slice's end). The log's warnings are counted, and the run says at its end how many
//!   its file holds.
//!
//! Both are redacted as slice logs are (`loopx_kernel::Redactor`: the built-in patterns and the
//! values of this process's credential-like variables, and, once `loopx run` knows its project,
//! the variables its agents' profiles declare secret), one event at a time: the formatter
//! writes each event whole, so a secret cannot straddle two writes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use loopx_kernel::{Project, Redactor};
use tracing::{Level, Metadata};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// The variable holding the filter.
pub const LOG_VAR: &str = "LOOPX_LOG";

/// The target of the run's progress lines (`loopx run` prints them itself): the file takes them,
/// stderr's log does not.
pub const RUN_TARGET: &str = "loopx::run";

/// How many run logs `.loopx/logs/` keeps.
pub const KEPT_RUN_LOGS: usize = 10;

/// The installed subscriber's file half: empty until `loopx run` opens its file.
#[derive(Debug, Clone)]
pub struct Logging {
    run_file: RunFile,
    /// What both halves redact with; widened by [`Logging::start_run_log`].
    redactor: Arc<RwLock<Redactor>>,
    /// The person asked for the log on stderr (`-v`, `LOOPX_LOG`): a run keeps it there.
    asked: bool,
    /// What the run's file alone takes, and how many of its warnings stderr did not show.
    quiet: Quiet,
}

/// stderr's log stays quiet while a run writes its file; the warnings it did not show.
#[derive(Debug, Clone, Default)]
struct Quiet {
    on: Arc<AtomicBool>,
    hidden: Arc<AtomicU64>,
}

impl Logging {
    /// Installs the process's subscriber. `verbose` is the number of `-v` flags; `quiet` lowers
    /// stderr's default to errors (`loopx sim`, whose injected faults warn by design). A
    /// `LOOPX_LOG` that is not a filter is reported on stderr, naming the variable, and the
    /// default used: a typo in a logging variable must not stop a supervisor.
    pub fn install(verbose: u8, quiet: bool) -> Logging {
        let redactor = Arc::new(RwLock::new(Redactor::for_process_env(&[])));
        let (from_env, problem) = filter_from_env();
        let chosen = |floor: LevelFilter, quiet: Option<&str>| {
            chosen_filter(from_env.as_deref(), verbose, floor, quiet)
        };
        let run_file = RunFile::default();
        let quiet_log = Quiet::default();
        let stderr = fmt::layer()
            .with_writer(Redacting {
                redactor: Arc::clone(&redactor),
                sink: Sink::Stderr,
                quiet: quiet_log.clone(),
            })
            .with_ansi(std::io::IsTerminal::is_terminal(&io::stderr()))
            .with_target(true)
            .with_filter(chosen(
                if quiet {
                    LevelFilter::ERROR
                } else {
                    LevelFilter::WARN
                },
                Some(RUN_TARGET),
            ));
        let file = fmt::layer()
            .with_writer(Redacting {
                redactor: Arc::clone(&redactor),
                sink: Sink::File(run_file.clone()),
                quiet: quiet_log.clone(),
            })
            .with_ansi(false)
            .with_target(true)
            .with_filter(chosen(LevelFilter::INFO, None));
        // Fails only when a subscriber is installed already (a test calling `main` twice).
        let _ = tracing_subscriber::registry()
            .with(stderr)
            .with(file)
            .try_init();
        let asked = verbose > 0 || from_env.is_some();
        if let Some(problem) = problem {
            let _ = writeln!(io::stderr(), "{problem}");
        }
        Logging {
            run_file,
            redactor,
            asked,
            quiet: quiet_log,
        }
    }

    /// Opens this run's file under `.loopx/logs/` and removes all but the newest
    /// [`KEPT_RUN_LOGS`], and from now on hides the values of `secret_names` (the variables the
    /// project's profiles declare secret) in both halves. Returns its path. A log that cannot be
    /// opened is reported and the run goes on: the store, not the log, is the record of what
    /// happened.
    pub fn start_run_log(&self, project: &Project, secret_names: &[String]) -> Option<PathBuf> {
        *self
            .redactor
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Redactor::for_process_env(secret_names);
        match open_run_log(project) {
            Ok((path, file)) => {
                *self
                    .run_file
                    .0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(file);
                // From now on the file has the log: stderr is the run's own lines.
                self.quiet.on.store(!self.asked, Ordering::Relaxed);
                tracing::info!(
                    log = %path.display(),
                    version = env!("CARGO_PKG_VERSION"),
                    pid = std::process::id(),
                    "loopx run started"
                );
                Some(path)
            }
            Err(e) => {
                let _ = writeln!(
                    io::stderr(),
                    "warning: cannot write the run's log under {}: {e}",
                    logs_dir(project).display()
                );
                None
            }
        }
    }
}

/// The filter `LOOPX_LOG` spells, if set to one; else the warning saying it spells none.
fn filter_from_env() -> (Option<String>, Option<String>) {
    let Some(text) = std::env::var(LOG_VAR).ok().filter(|v| !v.trim().is_empty()) else {
        return (None, None);
    };
    match EnvFilter::try_new(&text) {
        Ok(_) => (Some(text), None),
        Err(e) => (
            None,
            Some(format!(
                "warning: {LOG_VAR}=`{text}` is not a log filter ({e}); using the default\n\
                 (hint: a level such as `debug`, or `loopx_supervisor=debug,warn`)"
            )),
        ),
    }
}

/// A layer's filter: `LOOPX_LOG`'s when it is valid, else the layer's `floor` raised by `-v`,
/// with the `quiet` target off.
fn chosen_filter(
    from_env: Option<&str>,
    verbose: u8,
    floor: LevelFilter,
    quiet: Option<&str>,
) -> EnvFilter {
    if let Some(text) = from_env {
        return EnvFilter::new(text);
    }
    // `-v` raises the level above the layer's default; without it the default holds (errors
    // only on stderr for `loopx sim`).
    let level = level_for(verbose).map_or(floor, |asked| floor.max(asked));
    let filter = EnvFilter::default().add_directive(level.into());
    match quiet.and_then(|q| format!("{q}=off").parse().ok()) {
        Some(off) => filter.add_directive(off),
        None => filter,
    }
}

impl Logging {
    /// The run's last line when its file took warnings (or errors) that stderr did not show:
    /// how many, and where (`log`, shown relative to the project's `root`).
    pub fn held_back(&self, root: &Path, log: &Path) -> Option<String> {
        let what = match self.quiet.hidden.load(Ordering::Relaxed) {
            0 => return None,
            1 => "1 warning of loopx's own is".to_owned(),
            n => format!("{n} warnings of loopx's own are"),
        };
        let log = log.strip_prefix(root).unwrap_or(log);
        Some(format!(
            "note: {what} in the run's log, {} (`loopx -v run` shows them as they come)",
            log.display()
        ))
    }
}

fn level_for(verbose: u8) -> Option<LevelFilter> {
    match verbose {
        0 => None,
        1 => Some(LevelFilter::INFO),
        2 => Some(LevelFilter::DEBUG),
        _ => Some(LevelFilter::TRACE),
    }
}

/// `.loopx/logs/`.
pub fn logs_dir(project: &Project) -> PathBuf {
    project.state_dir().join("logs")
}

fn open_run_log(project: &Project) -> io::Result<(PathBuf, File)> {
    let dir = logs_dir(project);
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => loopx_kernel::project::ignore_in_git(project.root(), "/logs/"),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    let path = dir.join(format!("run-{stamp}-{}.log", std::process::id()));
    let file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)?;
    prune(&dir, KEPT_RUN_LOGS, &path);
    Ok((path, file))
}

/// Removes all but the newest `keep` run logs (by name: the name starts with the UTC time),
/// never `current`: after the wall clock stepped back, this run's name sorts before older ones,
/// and it would otherwise be removed the moment it was made.
fn prune(dir: &Path, keep: usize, current: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut logs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("run-") && n.ends_with(".log"))
        })
        .filter(|p| p != current)
        .collect();
    logs.sort();
    let excess = logs.len().saturating_sub(keep.saturating_sub(1));
    for old in &logs[..excess] {
        if let Err(e) = fs::remove_file(old) {
            tracing::warn!(path = %old.display(), error = %e, "cannot remove an old run log");
        }
    }
}

/// The run's file, once `loopx run` has opened it.
#[derive(Debug, Clone, Default)]
struct RunFile(Arc<Mutex<Option<File>>>);

#[derive(Debug, Clone)]
enum Sink {
    Stderr,
    File(RunFile),
}

/// A writer that redacts each event before it leaves the process.
#[derive(Debug, Clone)]
struct Redacting {
    redactor: Arc<RwLock<Redactor>>,
    sink: Sink,
    quiet: Quiet,
}

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = Redacting;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        if matches!(self.sink, Sink::File(_))
            && *meta.level() <= Level::WARN
            && self.quiet.on.load(Ordering::Relaxed)
        {
            self.quiet.hidden.fetch_add(1, Ordering::Relaxed);
        }
        self.clone()
    }
}

impl Write for Redacting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if matches!(self.sink, Sink::Stderr) && self.quiet.on.load(Ordering::Relaxed) {
            return Ok(buf.len());
        }
        let text = String::from_utf8_lossy(buf);
        let clean = self
            .redactor
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .redact(&text);
        // The formatter escapes an event's message, not its fields, and fields carry text from
        // outside: an agent's, or a value typed into the Lark table (`ESC[8m`, `U+202E`).
        match &self.sink {
            Sink::Stderr => {
                let colour = std::io::IsTerminal::is_terminal(&io::stderr());
                let safe = crate::output::safe_line(&clean, colour);
                io::stderr().lock().write_all(safe.as_bytes())?
            }
            Sink::File(file) => {
                let safe = crate::output::safe_line(&clean, false);
                let mut guard = file.0.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(file) = guard.as_mut() {
                    file.write_all(safe.as_bytes())?;
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_gets_each_event_redacted_and_nothing_before_it_is_opened() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.log");
        let run_file = RunFile::default();
        let mut writer = Redacting {
            redactor: Arc::new(RwLock::new(
                Redactor::new().with_value("hunter2-in-env".into()),
            )),
            sink: Sink::File(run_file.clone()),
            quiet: Quiet::default(),
        };
        writer
            .write_all(b"before the file: dropped\n")
            .expect("write");
        *run_file.0.lock().expect("lock") = Some(File::create(&path).expect("create"));
        let key = format!("sk-ant-{}", "a1".repeat(12));
        writer
            .write_all(format!("token {key} and hunter2-in-env\n").as_bytes())
            .expect("write");
        let text = fs::read_to_string(&path).expect("read");
        assert!(!text.contains("dropped"), "{text}");
        assert!(
            !text.contains(&key) && !text.contains("hunter2-in-env"),
            "{text}"
        );
        assert!(text.starts_with("token "), "{text}");
    }

    #[test]
    fn a_run_hides_what_its_profiles_declare_secret_whatever_its_name() {
        // A variable of this process whose name looks like no credential (cargo sets it):
        // hidden only once a profile names it.
        let (name, value) = ("CARGO_PKG_NAME", env!("CARGO_PKG_NAME"));
        assert_eq!(std::env::var(name).as_deref(), Ok(value), "set by cargo");
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::create(dir.path()).expect("project");
        let logging = Logging {
            run_file: RunFile::default(),
            redactor: Arc::new(RwLock::new(Redactor::for_process_env(&[]))),
            asked: false,
            quiet: Quiet::default(),
        };
        let mut writer = Redacting {
            redactor: Arc::clone(&logging.redactor),
            sink: Sink::Stderr,
            quiet: Quiet::default(),
        };
        let line = format!("the agent said {value}\n");
        assert!(
            writer
                .redactor
                .read()
                .expect("lock")
                .redact(&line)
                .contains(value),
            "not a secret by its name"
        );
        let path = logging
            .start_run_log(&project, &[name.to_owned()])
            .expect("the run's log");
        writer.sink = Sink::File(logging.run_file.clone());
        writer.write_all(line.as_bytes()).expect("write");
        let text = fs::read_to_string(&path).expect("read");
        assert!(text.contains("the agent said"), "{text}");
        assert!(!text.contains(value), "{text}");
    }

    #[test]
    fn pruning_keeps_the_newest_logs_by_name_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..13 {
            File::create(
                dir.path()
                    .join(format!("run-2026120{}T0000{i:02}Z-1.log", i % 3)),
            )
            .expect("create");
        }
        File::create(dir.path().join("notes.txt")).expect("create");
        let current = dir.path().join("run-20261202T000011Z-1.log");
        prune(dir.path(), 10, &current);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .expect("read")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        left.sort();
        assert_eq!(left.len(), 11, "{left:?}");
        assert!(left.contains(&"notes.txt".to_owned()));
        // The three oldest names (day 0 sorts first) went.
        for gone in ["run-20261200T000000Z-1.log", "run-20261200T000003Z-1.log"] {
            assert!(!left.contains(&gone.to_owned()), "{gone} should be gone");
        }
    }

    #[test]
    fn after_a_clock_step_back_this_runs_log_is_kept_though_its_name_is_oldest() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..12 {
            File::create(dir.path().join(format!("run-20261203T0000{i:02}Z-1.log")))
                .expect("create");
        }
        let current = dir.path().join("run-20200101T000000Z-2.log");
        File::create(&current).expect("this run's log");
        prune(dir.path(), 10, &current);
        assert!(current.exists(), "this run's own log was removed");
        let count = fs::read_dir(dir.path()).expect("read").count();
        assert_eq!(count, 10, "ten kept, this run's among them");
    }
}
