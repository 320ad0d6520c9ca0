//! loopx's own cost per slice with a trivial agent (decide, claim, spawn and writeback under
//! 50 ms: `docs/benchmarks.md`, "Performance budget"), the CPU of a supervisor idling on a
//! quota hold, and `loopx demo` end to end, all through the release binary.
//!
//! `cargo bench -p loopx-cli --bench slice [-- --runs 5 --slices 50 --idle-secs 30 --demo-runs 3]`;
//! `LOOPX_BENCH_BIN=/path/to/loopx` measures another build of loopx instead.
//!
//! Method. A project with `--slices` todos and one agent whose program is a shell script that
//! reads its prompt and prints a `done` report block, so every slice takes the whole path
//! (decide, claim, admit, record, spawn in a PTY, parse, sweep, scope check, writeback) and ends
//! `completed` with its todo done; the bench checks that. `loopx run --json --max-slices N` is
//! timed as a whole, and each JSON line is stamped as it arrives (the run flushes each one). The
//! *cycle* is one `slice_ended` to the next; it splits at `slice_started` into *before the start
//! event* (decide, claim, admit, the slice record) and *after it* (the spawn record, the PTY
//! spawn, the agent, sweep, parse, scope check, writeback). The agent's own cost is the same
//! script run directly, without loopx or a PTY, with the same prompt on stdin, as many times.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The release binary; `LOOPX_BENCH_BIN` runs another build (to compare before and after).
fn loopx_bin() -> std::path::PathBuf {
    std::env::var_os("LOOPX_BENCH_BIN")
        .map_or_else(|| env!("CARGO_BIN_EXE_loopx").into(), Into::into)
}

/// The trivial agent of a worktree goal: writes one file of its own (so each slice is a commit
/// and each todo a real merge onto the goal's branch), then reports done.
const AGENT_WRITES: &str = "#!/bin/sh
cat >/dev/null
echo ok > \"out-$LOOPX_TODO.txt\"
cat <<'EOF'
```loopx-report
{\"status\":\"done\",\"summary\":\"ok\"}
```
EOF
";

/// Where the bench's project is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tree {
    /// Not in git: the scope check walks `.loopx/` only.
    Plain,
    /// In git, the goal started `--isolation shared`: the scope check asks git.
    GitShared,
    /// In git, a worktree goal: a worktree per todo, a commit per slice, a landing per todo.
    Worktree,
}

/// The trivial agent: reads its prompt, reports done.
const AGENT: &str = "#!/bin/sh
cat >/dev/null
cat <<'EOF'
```loopx-report
{\"status\":\"done\",\"summary\":\"ok\"}
```
EOF
";

struct Options {
    runs: usize,
    slices: usize,
    idle_secs: u64,
    demo_runs: usize,
    /// Agents of the fleet scenario (one `loopx run` driving them all).
    agents: usize,
    /// Slices of the fleet scenario.
    fleet_slices: usize,
}

fn main() {
    let opts = Options {
        runs: arg("--runs").unwrap_or(5),
        slices: arg("--slices").unwrap_or(50),
        idle_secs: arg("--idle-secs").unwrap_or(30),
        demo_runs: arg("--demo-runs").unwrap_or(3),
        agents: arg("--agents").unwrap_or(32),
        fleet_slices: arg("--fleet-slices").unwrap_or(640),
    };
    if std::env::args().any(|a| a == "--fleet-only") {
        fleet(&opts);
        return;
    }
    println!(
        "machine: {} cores, Linux {}; binary {}",
        cores(),
        kernel(),
        loopx_bin().display()
    );
    println!();
    slices(&opts, Tree::Plain);
    slices(&opts, Tree::GitShared);
    slices(&opts, Tree::Worktree);
    fleet(&opts);
    idle(opts.idle_secs);
    demo(opts.demo_runs);
}

/// `--agents` trivial agents in one `loopx run`, `--fleet-slices` slices in all: throughput,
/// each slice's overhead (its whole cycle less the agent's own time), and proof that no todo
/// ran twice and no error reached the person.
///
/// A slice's cycle is its agent's previous `slice_ended` (or the run's start) to its own
/// `slice_ended`: the decision, the claim, the spawn, the agent, the writeback, and any wait
/// for the store's write lock or for a CPU. Its overhead is the cycle less the bare agent's
/// median, measured unloaded, as in the single-agent table.
fn fleet(opts: &Options) {
    let dir = tempfile::tempdir().expect("temp dir");
    let todos = opts.fleet_slices;
    project(dir.path(), "agent1", todos, Tree::Plain);
    for i in 2..=opts.agents {
        loopx(
            dir.path(),
            &["agent", "add", &format!("agent{i}"), "--profile", "agent1"],
        );
    }
    let started = Instant::now();
    let mut child = Command::new(loopx_bin())
        .args(["run", "--json", "--max-slices", &todos.to_string()])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loopx run starts");
    let stderr = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text).ok();
        text
    });
    // The supervisor's own CPU (all its threads) and its reaped children's (helpers, agents),
    // read from /proc until it exits.
    let pid = child.id();
    let sampler = std::thread::spawn(move || {
        let mut last = (0u64, 0u64);
        while let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
            if rest.starts_with('Z') {
                break;
            }
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|x| x.parse().unwrap_or(0))
                .collect();
            if f.len() > 14 {
                // utime, stime, cutime, cstime: fields 14-17 of stat, 11-14 here.
                last = (f[11] + f[12], f[13] + f[14]);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        last
    });
    let events = read_events(&mut child);
    let (own_ticks, children_ticks) = sampler.join().expect("sampler");
    let status = child.wait().expect("loopx run ends");
    let wall = started.elapsed();
    let stderr = errors.join().expect("stderr reader");
    assert!(status.success(), "loopx run failed: {stderr}");
    let mut last_end: std::collections::HashMap<String, Instant> = Default::default();
    let mut cycles = Vec::new();
    let mut done: std::collections::HashMap<String, u32> = Default::default();
    let mut trouble = Vec::new();
    for (at, event) in &events {
        let agent = event["agent"].as_str().unwrap_or_default().to_owned();
        match event["event"].as_str() {
            Some("slice_ended") => {
                assert_eq!(event["outcome"], "completed", "{event}");
                let todo = event["todo"].as_str().expect("a todo").to_owned();
                *done.entry(todo).or_default() += 1;
                let from = last_end.get(&agent).copied().unwrap_or(started);
                cycles.push(*at - from);
                last_end.insert(agent, *at);
            }
            Some("agent_error") => trouble.push(event.to_string()),
            _ => {}
        }
    }
    let twice: Vec<_> = done.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "todos run more than once: {twice:?}");
    assert_eq!(done.len(), todos, "every todo ran");
    let busy = stderr.contains("busy") || trouble.iter().any(|t| t.contains("busy"));
    let prompt = first_prompt(dir.path());
    let agent = median(&bare_agent(200, &prompt));
    let overheads: Vec<Duration> = cycles.iter().map(|c| c.saturating_sub(agent)).collect();
    println!(
        "### {} agents in one `loopx run`, {todos} slices of a trivial agent, not in git",
        opts.agents
    );
    println!();
    println!(
        "wall {:.2} s, **{:.1} slices/s**; cycle per slice median {:.0} ms, p90 {:.0} ms; \
         bare agent {:.2} ms; **overhead per slice p50 {:.0} ms, p90 {:.0} ms**",
        wall.as_secs_f64(),
        todos as f64 / wall.as_secs_f64(),
        ms(median(&cycles)),
        ms(p90(&cycles)),
        ms(agent),
        ms(median(&overheads)),
        ms(p90(&overheads)),
    );
    let tick_ms = 1000.0 / ticks_per_second().parse::<f64>().unwrap_or(100.0);
    println!(
        "CPU per slice: the supervisor's own (its threads) {:.1} ms, its children's (the exec \
         helper, the sandbox, the agent's shell) {:.1} ms; the machine has {} cores",
        own_ticks as f64 * tick_ms / todos as f64,
        children_ticks as f64 * tick_ms / todos as f64,
        cores()
    );
    println!(
        "each todo ran exactly once ({} todos); store-busy errors shown: {}; agent errors: {}",
        done.len(),
        if busy { "YES" } else { "none" },
        trouble.len()
    );
    for t in trouble.iter().take(5) {
        println!("  {t}");
    }
    println!();
}

fn arg<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::args()
        .skip_while(|a| a != name)
        .nth(1)
        .and_then(|n| n.parse().ok())
}

/// `runs` runs of `loopx run --max-slices N` on fresh projects, then the bare agent.
fn slices(opts: &Options, tree: Tree) {
    let scale = match tree {
        Tree::Plain => "not in git (scope check of `.loopx/` only)",
        Tree::GitShared => "in a git work tree, `--isolation shared` (scope check through git)",
        Tree::Worktree => {
            "a worktree goal (each todo: a worktree, an agent writing one file, a commit, a landing)"
        }
    };
    println!(
        "### {} runs of `loopx run --max-slices {}`, {scale}",
        opts.runs, opts.slices
    );
    println!();
    println!("| run | wall | wall / slice | cycle | before the start event | after it |");
    println!("|---|---|---|---|---|---|");
    let mut all = Phases::default();
    let mut per_slice = Vec::new();
    let mut prompt = String::new();
    for run in 1..=opts.runs {
        let dir = tempfile::tempdir().expect("temp dir");
        project(dir.path(), "bench", opts.slices, tree);
        let (wall, phases) = run_slices(dir.path(), opts.slices);
        if prompt.is_empty() {
            prompt = first_prompt(dir.path());
        }
        per_slice.push(wall / opts.slices as u32);
        println!(
            "| {run} | {:.0} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
            ms(wall),
            ms(wall / opts.slices as u32),
            ms(median(&phases.cycle)),
            ms(median(&phases.before)),
            ms(median(&phases.after)),
        );
        all.extend(phases);
    }
    let agent = bare_agent(opts.slices * opts.runs, &prompt);
    println!(
        "| **all** | | **{:.1} ms** | **{:.1} ms** (p90 {:.1}) | {:.1} ms | {:.1} ms |",
        ms(median(&per_slice)),
        ms(median(&all.cycle)),
        ms(p90(&all.cycle)),
        ms(median(&all.before)),
        ms(median(&all.after)),
    );
    println!();
    println!(
        "bare agent (the script run directly with the {}-byte prompt on stdin, no PTY): median {:.2} ms, p90 {:.2} ms over {} runs",
        prompt.len(),
        ms(median(&agent)),
        ms(p90(&agent)),
        agent.len()
    );
    println!(
        "loopx's overhead per slice: median cycle - bare agent = {:.1} ms",
        ms(median(&all.cycle).saturating_sub(median(&agent)))
    );
    println!();
}

/// A fresh project: a goal, `todos` todos, and the trivial agent `name`.
fn project(dir: &Path, name: &str, todos: usize, tree: Tree) {
    if tree != Tree::Plain {
        git_in(dir, &["init", "-q"]);
        std::fs::write(dir.join("README.md"), "A benchmark project.\n").expect("readme");
        git_in(dir, &["add", "README.md"]);
        git_in(dir, &["commit", "-q", "-m", "Start"]);
    }
    loopx(dir, &["init"]);
    let isolation = match tree {
        Tree::Worktree => "worktree",
        _ => "shared",
    };
    loopx(
        dir,
        &["goal", "start", "Benchmark", "--isolation", isolation],
    );
    let script = dir.join("agent.sh");
    let agent = match tree {
        Tree::Worktree => AGENT_WRITES,
        _ => AGENT,
    };
    std::fs::write(&script, agent).expect("script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).expect("chmod");
    let profile = format!(
        "adapter = \"generic\"\nprogram = \"{}\"\npermission = \"workspace-write\"\n",
        script.display()
    );
    std::fs::write(dir.join(format!(".loopx/profiles/{name}.toml")), profile).expect("profile");
    loopx(dir, &["agent", "add", name, "--profile", name]);
    for i in 1..=todos {
        loopx(dir, &["todo", "add", &format!("Benchmark todo {i}")]);
    }
}

fn git_in(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?} failed");
}

fn loopx(dir: &Path, args: &[&str]) {
    let status = Command::new(loopx_bin())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("loopx runs");
    assert!(status.success(), "loopx {args:?} failed");
}

/// Each slice's phases, from the arrival times of `loopx run --json` events.
#[derive(Default)]
struct Phases {
    /// One slice end to the next: the whole cost of a slice in steady state.
    cycle: Vec<Duration>,
    /// Previous slice's end (or the loop's start) to this slice's start event.
    before: Vec<Duration>,
    /// The start event to the end event.
    after: Vec<Duration>,
}

impl Phases {
    fn extend(&mut self, other: Phases) {
        self.cycle.extend(other.cycle);
        self.before.extend(other.before);
        self.after.extend(other.after);
    }
}

/// Runs `loopx run --json --max-slices slices`; checks every slice completed its todo.
fn run_slices(dir: &Path, slices: usize) -> (Duration, Phases) {
    let started = Instant::now();
    let mut child = Command::new(loopx_bin())
        .args(["run", "--json", "--max-slices", &slices.to_string()])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("loopx run starts");
    let events = read_events(&mut child);
    let status = child.wait().expect("loopx run ends");
    let wall = started.elapsed();
    assert!(status.success(), "loopx run failed");
    let mut phases = Phases::default();
    let mut last_end = None;
    let mut slice_start = None;
    let mut ended = 0;
    for (at, event) in &events {
        match event["event"].as_str() {
            Some("running") => last_end = Some(*at),
            Some("slice_started") => {
                phases.before.push(*at - last_end.expect("running first"));
                slice_start = Some(*at);
            }
            Some("slice_ended") => {
                assert_eq!(event["outcome"], "completed", "{event}");
                assert_eq!(event["todo_state"], "done", "{event}");
                assert_eq!(event["report"], "done", "{event}");
                phases.after.push(*at - slice_start.expect("started first"));
                if ended > 0 {
                    phases.cycle.push(*at - last_end.expect("an earlier end"));
                }
                last_end = Some(*at);
                ended += 1;
            }
            _ => {}
        }
    }
    assert_eq!(ended, slices, "every slice ran");
    (wall, phases)
}

/// Every JSON line of the child's stdout with the moment it arrived.
fn read_events(child: &mut Child) -> Vec<(Instant, Value)> {
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout)
        .lines()
        .map(|line| {
            let at = Instant::now();
            let line = line.expect("a line");
            let event = serde_json::from_str(&line).expect("a JSON line");
            (at, event)
        })
        .collect()
}

/// The prompt the first slice was given, as its terminal echoed it into the log (the prompt
/// goes by stdin, so no prompt file is written), so the bare agent reads the same amount.
fn first_prompt(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join(".loopx/slices/s1.log")).expect("the slice log");
    // The log ends with the agent's own report block.
    let end = log.rfind("```loopx-report").unwrap_or(log.len());
    log[..end].to_owned()
}

/// The agent without loopx: the script spawned directly, the prompt on stdin, its output read.
fn bare_agent(runs: usize, prompt: &str) -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("agent.sh");
    std::fs::write(&script, AGENT).expect("script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).expect("chmod");
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            let mut child = Command::new(&script)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("agent runs");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(prompt.as_bytes())
                .expect("prompt written");
            let out = child.wait_with_output().expect("agent ends");
            let took = started.elapsed();
            assert!(out.status.success());
            assert!(String::from_utf8_lossy(&out.stdout).contains("loopx-report"));
            took
        })
        .collect()
}

/// A supervisor whose only agent is paused: its CPU time over `secs` seconds.
fn idle(secs: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    project(dir.path(), "held", 3, Tree::Plain);
    loopx(dir.path(), &["quota", "pause", "--agent", "held"]);
    let mut child = Command::new(loopx_bin())
        .args(["run", "--json"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        // It says "interrupted" when the bench stops it.
        .stderr(Stdio::null())
        .spawn()
        .expect("loopx run starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Settled once it has said why it waits.
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the supervisor reports the pause");
        if line.contains("\"paused\"") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id();
    let before = cpu(pid);
    std::thread::sleep(Duration::from_secs(secs));
    let after = cpu(pid);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal the supervisor");
    let _ = child.wait();
    println!("### A supervisor held by `loopx quota pause`, {secs} s");
    println!();
    println!(
        "utime+stime: {} ticks ({} Hz); on-CPU (schedstat, all threads): {:.3} ms; context switches: {} over {} threads",
        after.ticks.saturating_sub(before.ticks),
        ticks_per_second(),
        after.runtime_ns.saturating_sub(before.runtime_ns) as f64 / 1e6,
        after.switches.saturating_sub(before.switches),
        after.threads,
    );
    println!(
        "(for scale: from its start to the first reading it used {} ticks, {:.3} ms on CPU)",
        before.ticks,
        before.runtime_ns as f64 / 1e6
    );
    println!();
}

/// A process's CPU use so far.
struct Cpu {
    /// utime + stime from `/proc/PID/stat`, in clock ticks.
    ticks: u64,
    /// Time on CPU, nanoseconds, summed over threads (`/proc/PID/task/*/schedstat`).
    runtime_ns: u64,
    /// Voluntary and involuntary context switches, summed over threads: how often it woke.
    switches: u64,
    threads: usize,
}

fn cpu(pid: u32) -> Cpu {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> u64 { fields[n - 3].parse().expect("a number") };
    let mut out = Cpu {
        ticks: field(14) + field(15),
        runtime_ns: 0,
        switches: 0,
        threads: 0,
    };
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .filter_map(Result::ok)
    {
        let path = task.path();
        let Ok(schedstat) = std::fs::read_to_string(path.join("schedstat")) else {
            continue;
        };
        out.threads += 1;
        out.runtime_ns += schedstat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        out.switches += status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    out
}

fn ticks_per_second() -> String {
    command_output("getconf", &["CLK_TCK"])
}

/// `loopx demo --dir DIR </dev/null`, end to end.
fn demo(runs: usize) {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let dir = tempfile::tempdir().expect("temp dir");
            let started = Instant::now();
            let status = Command::new(loopx_bin())
                .args(["demo", "--dir"])
                .arg(dir.path().join("demo"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("loopx demo runs");
            let took = started.elapsed();
            assert!(status.success(), "loopx demo failed");
            took
        })
        .collect();
    times.sort();
    println!("### `loopx demo --dir DIR </dev/null`, {runs} runs");
    println!();
    println!(
        "median {:.2} s (min {:.2} s, max {:.2} s)",
        times[times.len() / 2].as_secs_f64(),
        times[0].as_secs_f64(),
        times[times.len() - 1].as_secs_f64(),
    );
}

fn cores() -> String {
    std::thread::available_parallelism().map_or_else(|_| "?".into(), |n| n.to_string())
}

fn kernel() -> String {
    command_output("uname", &["-r"])
}

fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "?".into())
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn p90(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() * 9 / 10]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
