//! `loopx log [--follow] [-n N] [--slice ID | --goal ID --agent NAME --todo ID --kind KIND
//! --since TIME --until TIME]`.

use std::time::Duration;

use loopx_app::event_filter::EventFilter;
use loopx_kernel::doorbell::Listener;
use loopx_kernel::model::Event;
use loopx_kernel::{EventKind, SliceId};

use super::id;
use crate::args::LogArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, args: LogArgs) -> Result<(), ExpectedError> {
    let slice: Option<SliceId> = args.slice.as_deref().map(id).transpose()?;
    let filter = filter(ctx.now(), &args)?;
    let about = match slice {
        Some(slice) => About::Slice(slice),
        None if filter.is_empty() => About::All,
        None => About::Some(Box::new(filter)),
    };
    let app = ctx.app()?;
    if let About::Some(filter) = &about {
        if let Some(goal) = filter.goal {
            app.goal(Some(goal))?;
        }
        if let Some(todo) = filter.todo {
            app.read(|s| s.todo(todo))?.ok_or_else(|| {
                ExpectedError::from(loopx_kernel::Invalid::NotFound {
                    what: "todo",
                    id: todo.to_string(),
                })
            })?;
        }
    }
    let project = app.project().clone();
    // Bind before the first read, so that nothing committed in between is missed.
    let listener = args.follow.then(|| Listener::bind(&project));
    let events = app.read(|s| match &about {
        About::All => s.events_tail(args.limit),
        // A slice's events are all shown; the newest `limit` of those a filter keeps.
        About::Slice(_) => about.keep(s, s.events_from(1, usize::MAX)?),
        About::Some(_) => {
            let mut events = about.keep(s, s.events_from(1, usize::MAX)?)?;
            events.drain(..events.len().saturating_sub(args.limit));
            Ok(events)
        }
    })?;
    let recorded_sha = match slice {
        Some(slice) => recorded_sha(&app, slice)?,
        None => String::new(),
    };
    let mut first = true;
    let mut next = events.last().map_or(1, |e| e.seq + 1);
    for event in &events {
        print_event(ctx, event, &mut first)?;
    }
    if let Some(slice) = slice
        && !ctx.json
    {
        let log = slice_log(&project, slice);
        let running = !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::SliceEnded { .. }));
        let shown = show_output(
            ctx,
            &log,
            slice,
            &recorded_sha,
            args.raw,
            running,
            listener.is_some(),
        )?;
        if let Some(listener) = listener
            && running
        {
            let output = LiveOutput::new(log, shown, args.raw);
            return follow_slice(ctx, &app, slice, output, listener, next);
        }
        return ctx.flush();
    }
    ctx.flush()?;
    let Some(listener) = listener else {
        return Ok(());
    };
    if next == 1 {
        next = store_next(&app)?;
    }
    follow_events(ctx, &app, &listener, about, next, first)
}

/// `--follow` without a running slice's output: prints each new event (those `about` keeps)
/// as it is committed, from `next` on, until interrupted.
fn follow_events(
    ctx: &mut Ctx,
    app: &loopx_app::App,
    listener: &Listener,
    about: About,
    mut next: u64,
    mut first: bool,
) -> Result<(), ExpectedError> {
    loop {
        listener.wait(Duration::from_secs(1));
        let (fresh, last) = app.read(|s| {
            let fresh = s.events_from(next, 10_000)?;
            let last = fresh.last().map(|e| e.seq);
            Ok((about.keep(s, fresh)?, last))
        })?;
        for event in &fresh {
            print_event(ctx, event, &mut first)?;
        }
        if let Some(last) = last {
            next = last + 1;
        }
        ctx.flush()?;
    }
}

/// Which events `log` shows.
#[derive(Debug, Clone)]
enum About {
    All,
    Slice(SliceId),
    /// Those a filter keeps (`--goal`, `--agent`, `--todo`, `--kind`, `--since`, `--until`).
    Some(Box<EventFilter>),
}

impl About {
    /// The `events` about it, in order.
    fn keep(
        &self,
        s: &loopx_kernel::Snapshot<'_>,
        events: Vec<Event>,
    ) -> Result<Vec<Event>, loopx_kernel::KernelError> {
        match self {
            About::All => Ok(events),
            About::Slice(slice) => Ok(events
                .into_iter()
                .filter(|e| about_slice(e, *slice))
                .collect()),
            About::Some(filter) => filter.keep(s, events),
        }
    }
}

/// The filter the flags ask for; an unknown kind or a time that does not parse is an error.
fn filter(now: loopx_kernel::Timestamp, args: &LogArgs) -> Result<EventFilter, ExpectedError> {
    let filter = EventFilter {
        goal: args.goal.as_deref().map(id).transpose()?,
        agent: args.agent.as_deref().map(id).transpose()?,
        todo: args.todo.as_deref().map(id).transpose()?,
        kinds: args.kinds.clone(),
        since: args
            .since
            .as_deref()
            .map(|t| moment(now, "--since", t))
            .transpose()?,
        until: args
            .until
            .as_deref()
            .map(|t| moment(now, "--until", t))
            .transpose()?,
    };
    if let Some(problem) = filter.unknown_kind() {
        return Err(ExpectedError::Usage(problem));
    }
    if let (Some(since), Some(until)) = (filter.since, filter.until)
        && since > until
    {
        return Err(ExpectedError::Usage(format!(
            "--since ({since}) is after --until ({until}): no event is in between\n(hint: the earlier time goes to --since)"
        )));
    }
    Ok(filter)
}

/// `2026-12-07T09:00:00Z`, or a duration ago (`2h`).
fn moment(
    now: loopx_kernel::Timestamp,
    flag: &str,
    text: &str,
) -> Result<loopx_kernel::Timestamp, ExpectedError> {
    if let Some(at) = loopx_kernel::Timestamp::parse_rfc3339(text) {
        return Ok(at);
    }
    super::duration(flag, text)
        .map(|ago| loopx_kernel::Timestamp(now.0.saturating_sub(ago.as_millis() as u64)))
        .map_err(|_| {
            ExpectedError::Usage(format!(
                "invalid time `{text}` for {flag}\n(hint: an RFC 3339 time like 2026-12-07T09:00:00Z, or a duration ago like 2h)"
            ))
        })
}

/// The sha256 `slice`'s log had when it ended (empty while it runs); an unknown slice is an
/// error.
fn recorded_sha(app: &loopx_app::App, slice: SliceId) -> Result<String, ExpectedError> {
    match app.read(|s| s.slice(slice))? {
        Some(record) => Ok(record.log_sha256),
        None => Err(loopx_kernel::Invalid::NotFound {
            what: "slice",
            id: slice.to_string(),
        }
        .into()),
    }
}

fn slice_log(project: &loopx_kernel::Project, slice: SliceId) -> std::path::PathBuf {
    project
        .state_dir()
        .join("slices")
        .join(format!("{slice}.log"))
}

/// Opens the log. It is loopx's, capped at the profile's `max_output`; a planted FIFO or device
/// in its place is refused, not read forever.
fn open_log(log: &std::path::Path) -> std::io::Result<std::fs::File> {
    loopx_adapters::open_regular(log)
}

/// Reads at most `limit` bytes of `file` from `offset`.
fn read_at(file: &mut std::fs::File, offset: u64, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek};
    file.seek(std::io::SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Where an unfinished private key begins in `bytes` (a `-----BEGIN` line with no `-----END`
/// after it): whole lines are redacted one read at a time, and a key split between two reads
/// would show its body. At most 64 KiB are held back.
fn open_key_start(bytes: &[u8]) -> Option<usize> {
    let find_last =
        |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).rposition(|w| w == needle);
    let begin = find_last(bytes, b"-----BEGIN")?;
    if bytes[begin..].windows(8).any(|w| w == b"-----END") || bytes.len() - begin > 64 << 10 {
        return None;
    }
    Some(
        bytes[..begin]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1),
    )
}

/// What `show_output` showed of the log: how many bytes, and the file it read (kept open: at
/// the slice's end the log is replaced by a redacted copy, and following reads on in the file
/// the agent's output went into).
struct Shown {
    bytes: u64,
    file: Option<std::fs::File>,
}

/// Prints the slice's output so far. A running slice's log is shown in whole lines (the rest
/// follows) and redacted here, because its file is redacted in full only when the slice ends.
fn show_output(
    ctx: &mut Ctx,
    log: &std::path::Path,
    slice: SliceId,
    recorded_sha: &str,
    raw: bool,
    running: bool,
    following: bool,
) -> Result<Shown, ExpectedError> {
    let read = open_log(log).and_then(|mut file| Ok((read_at(&mut file, 0, 256 << 20)?, file)));
    let Ok((mut output, file)) = read else {
        return Ok(Shown {
            bytes: 0,
            file: None,
        });
    };
    let mut held = 0;
    if running {
        // A key still being printed waits for its end. A half line is shown when not
        // following (it may be a prompt the agent waits at); following shows it once whole.
        if let Some(start) = open_key_start(&output) {
            output.truncate(start);
        }
        held = output.len()
            - output
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
        if following {
            output.truncate(output.len() - held);
        }
    }
    let shown = Shown {
        bytes: (output.len() - if following { 0 } else { held }) as u64,
        file: Some(file),
    };
    let redactor = loopx_kernel::redact::Redactor::for_process_env(&[]);
    if raw {
        // Asked for by name: the bytes as the agent printed them (masked secrets aside).
        ctx.flush()?;
        if running {
            let text = String::from_utf8_lossy(&output);
            std::io::Write::write_all(&mut ctx.out, redactor.redact(&text).as_bytes())?;
        } else {
            std::io::Write::write_all(&mut ctx.out, &output)?;
        }
        return Ok(shown);
    }
    ctx.line(format!("--- output of {slice} ({}) ---", log.display()))?;
    if !running && !recorded_sha.is_empty() {
        warn_if_changed(ctx, &output, recorded_sha, slice)?;
    }
    // A structured stream reads as a transcript; anything else as the text it printed.
    // Escape sequences are the agent's: shown as text, never obeyed.
    let text = loopx_adapters::transcript::render(&output)
        .unwrap_or_else(|| loopx_vocab::strip_escapes(&output));
    ctx.line(loopx_vocab::clean_text(redactor.redact(&text).as_bytes()))?;
    Ok(shown)
}

/// Warns when an ended slice's log no longer has the sha256 recorded when it ended.
fn warn_if_changed(
    ctx: &mut Ctx,
    output: &[u8],
    recorded_sha: &str,
    slice: SliceId,
) -> Result<(), ExpectedError> {
    let sha = sha256_hex(output);
    if sha == recorded_sha {
        return Ok(());
    }
    ctx.line(ctx.style.red(&format!(
        "warning: this log was changed after loopx wrote it (sha256 {} now, {} when {slice} ended): it is not what the agent printed",
        &sha[..12],
        &recorded_sha[..recorded_sha.len().min(12)]
    )))
}

/// How often a followed slice's log is read for new output.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// Follows a running slice: its output as the agent prints it (the supervisor writes the log
/// out at least every 250 ms), then its end. Whole lines are shown, each structured event as
/// its transcript line; what is shown live is redacted again here, because the log is
/// redacted in full only when the slice ends.
fn follow_slice(
    ctx: &mut Ctx,
    app: &loopx_app::App,
    slice: SliceId,
    mut output: LiveOutput,
    listener: Listener,
    mut next: u64,
) -> Result<(), ExpectedError> {
    let mut first = false;
    if next == 1 {
        next = store_next(app)?;
    }
    for polls in 1u64.. {
        // The doorbell says when the slice's events arrive; every few seconds the store is read
        // anyway, in case a ring was lost.
        let rang = listener.wait(FOLLOW_EVERY);
        let mut ended = false;
        if rang || polls % 15 == 0 {
            let fresh = app.read(|s| s.events_from(next, 10_000))?;
            if let Some(last) = fresh.last() {
                next = last.seq + 1;
            }
            for event in fresh.iter().filter(|e| about_slice(e, slice)) {
                ended |= matches!(event.kind, EventKind::SliceEnded { .. });
                // Output first: the end is printed after what came before it.
                if ended {
                    output.print_new(ctx, true)?;
                }
                print_event(ctx, event, &mut first)?;
            }
        }
        if ended {
            return ctx.flush();
        }
        output.print_new(ctx, false)?;
        ctx.flush()?;
    }
    Ok(())
}

/// A running slice's log, read as it grows.
struct LiveOutput {
    log: std::path::PathBuf,
    /// Bytes of the log already read.
    offset: u64,
    /// The log as it was opened: read on to its end after the slice ends, though by then a
    /// redacted copy has replaced it under its name.
    file: Option<std::fs::File>,
    raw: bool,
    /// Read, not yet shown: the start of a line.
    partial: Vec<u8>,
    stripper: loopx_vocab::AnsiStripper,
    transcript: loopx_adapters::transcript::LiveTranscript,
    redactor: loopx_kernel::redact::Redactor,
}

impl LiveOutput {
    fn new(log: std::path::PathBuf, shown: Shown, raw: bool) -> LiveOutput {
        LiveOutput {
            log,
            offset: shown.bytes,
            file: shown.file,
            raw,
            partial: Vec::new(),
            stripper: loopx_vocab::AnsiStripper::default(),
            transcript: loopx_adapters::transcript::LiveTranscript::default(),
            redactor: loopx_kernel::redact::Redactor::for_process_env(&[]),
        }
    }

    /// Prints what the log gained: whole lines only, unless `last`.
    fn print_new(&mut self, ctx: &mut Ctx, last: bool) -> Result<(), ExpectedError> {
        if self.file.is_none() {
            self.file = open_log(&self.log).ok();
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        let Ok(bytes) = read_at(file, self.offset, 16 << 20) else {
            return Ok(());
        };
        self.offset += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        let mut cut = if last {
            self.partial.len()
        } else {
            self.partial
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
        };
        if !last && let Some(start) = open_key_start(&self.partial[..cut]) {
            cut = start;
        }
        let lines: Vec<u8> = self.partial.drain(..cut).collect();
        if lines.is_empty() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&lines);
        let text = self.redactor.redact(&text);
        if self.raw {
            ctx.flush()?;
            std::io::Write::write_all(&mut ctx.out, text.as_bytes())?;
            return Ok(());
        }
        let mut shown = String::new();
        for line in text.lines() {
            // Escape sequences are stripped from plain lines; events are JSON, shown as text.
            let mut stripped = Vec::new();
            self.stripper.feed(line.as_bytes(), &mut stripped);
            let plain = String::from_utf8_lossy(&stripped);
            let line = if line.trim_start().starts_with('{') {
                line
            } else {
                &plain
            };
            shown.push_str(&self.transcript.line(line));
        }
        if last {
            shown.push_str(&self.transcript.finish());
        }
        let shown = shown.trim_end_matches('\n');
        if !shown.is_empty() {
            ctx.line(loopx_vocab::clean_text(shown.as_bytes()))?;
        }
        Ok(())
    }
}

fn store_next(app: &loopx_app::App) -> Result<u64, ExpectedError> {
    Ok(app.read(|s| s.event_count())? + 1)
}

fn about_slice(event: &Event, wanted: SliceId) -> bool {
    match &event.kind {
        EventKind::SliceStarted { slice, .. }
        | EventKind::SliceSpawned { slice, .. }
        | EventKind::SliceEnded { slice, .. } => *slice == wanted,
        _ => false,
    }
}

fn print_event(ctx: &mut Ctx, event: &Event, first: &mut bool) -> Result<(), ExpectedError> {
    if ctx.json {
        let mut object = serde_json::json!({
            "seq": event.seq,
            "at": event.at.to_string(),
            "actor": event.actor,
            "kind": event.kind.name(),
            "data": event_data(&event.kind),
        });
        if std::mem::take(first) {
            object["format_version"] = 1.into();
        }
        return ctx.json_out(&object);
    }
    let line = format!(
        "{:>6}  {}  {:<16}  {}",
        event.seq,
        event.at,
        event.actor,
        event.kind.describe()
    );
    ctx.line(line)
}

/// The variant's fields as an object (`{}` for a variant without fields).
fn event_data(kind: &EventKind) -> serde_json::Value {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::Object(map)) => {
            map.into_iter().next().map(|(_, v)| v).unwrap_or_default()
        }
        _ => serde_json::json!({}),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
