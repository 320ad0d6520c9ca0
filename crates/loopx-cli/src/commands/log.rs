//! `loopx log [--follow] [-n N] [--slice ID]`.

use std::time::Duration;

use loopx_kernel::doorbell::Listener;
use loopx_kernel::model::Event;
use loopx_kernel::{EventKind, SliceId};

use super::id;
use crate::args::LogArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, args: LogArgs) -> Result<(), ExpectedError> {
    let slice: Option<SliceId> = args.slice.as_deref().map(id).transpose()?;
    let project = ctx.project()?;
    // Bind before the first read, so that nothing committed in between is missed.
    let listener = args.follow.then(|| Listener::bind(&project));
    let store = loopx_kernel::Store::open_read(&project)?;
    let events = store.read(|s| {
        if slice.is_some() {
            let all = s.events_from(1, usize::MAX)?;
            Ok(all
                .into_iter()
                .filter(|e| about_slice(e, slice))
                .collect::<Vec<_>>())
        } else {
            s.events_tail(args.limit)
        }
    })?;
    let recorded_sha = match slice {
        Some(slice) => match store.read(|s| s.slice(slice))? {
            Some(record) => record.log_sha256,
            None => {
                return Err(loopx_kernel::Invalid::NotFound {
                    what: "slice",
                    id: slice.to_string(),
                }
                .into());
            }
        },
        None => String::new(),
    };
    drop(store);
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
        let shown = show_output(ctx, &log, slice, &recorded_sha, args.raw, running)?;
        if let Some(listener) = listener
            && running
        {
            let output = LiveOutput::new(log, shown, args.raw);
            return follow_slice(ctx, &project, slice, output, listener, next);
        }
        return ctx.flush();
    }
    ctx.flush()?;
    let Some(listener) = listener else {
        return Ok(());
    };
    if next == 1 {
        next = store_next(&project)?;
    }
    loop {
        listener.wait(Duration::from_secs(1));
        let store = loopx_kernel::Store::open_read(&project)?;
        let fresh = store.read(|s| s.events_from(next, 10_000))?;
        drop(store);
        for event in fresh.iter().filter(|e| about_slice(e, slice)) {
            print_event(ctx, event, &mut first)?;
        }
        if let Some(last) = fresh.last() {
            next = last.seq + 1;
        }
        ctx.flush()?;
    }
}

fn slice_log(project: &loopx_kernel::Project, slice: SliceId) -> std::path::PathBuf {
    project
        .state_dir()
        .join("slices")
        .join(format!("{slice}.log"))
}

/// Reads at most `limit` bytes of the log from `offset`, and which file that was (device,
/// inode: the log is replaced when it is redacted at the slice's end). The log is loopx's,
/// capped at the profile's `max_output`; a planted FIFO or device in its place is refused, not
/// read forever.
fn read_log(log: &std::path::Path, offset: u64, limit: u64) -> std::io::Result<(Vec<u8>, FileId)> {
    use std::io::{Read, Seek};
    use std::os::unix::fs::MetadataExt;
    let mut file = loopx_adapters::open_regular(log)?;
    let meta = file.metadata()?;
    file.seek(std::io::SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok((bytes, (meta.dev(), meta.ino())))
}

type FileId = (u64, u64);

/// What `show_output` showed of the log: bytes, whole lines, and which file.
struct Shown {
    bytes: u64,
    lines: u64,
    file: Option<FileId>,
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
) -> Result<Shown, ExpectedError> {
    let Ok((mut output, file)) = read_log(log, 0, 256 << 20) else {
        return Ok(Shown {
            bytes: 0,
            lines: 0,
            file: None,
        });
    };
    if running {
        let whole = output
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        output.truncate(whole);
    }
    let shown = Shown {
        bytes: output.len() as u64,
        lines: output.iter().filter(|&&b| b == b'\n').count() as u64,
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
    let sha = sha256_hex(&output);
    if !running && !recorded_sha.is_empty() && sha != recorded_sha {
        ctx.line(ctx.style.red(&format!(
            "warning: this log was changed after loopx wrote it (sha256 {} now, {} when {slice} ended): it is not what the agent printed",
            &sha[..12],
            &recorded_sha[..recorded_sha.len().min(12)]
        )))?;
    }
    // A structured stream reads as a transcript; anything else as the text it printed.
    // Escape sequences are the agent's: shown as text, never obeyed.
    let text = loopx_adapters::transcript::render(&output).unwrap_or_else(|| {
        let mut stripped = Vec::with_capacity(output.len());
        loopx_pty::AnsiStripper::default().feed(&output, &mut stripped);
        String::from_utf8_lossy(&stripped).into_owned()
    });
    ctx.line(loopx_pty::clean_text(redactor.redact(&text).as_bytes()))?;
    Ok(shown)
}

/// How often a followed slice's log is read for new output.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// Follows a running slice: its output as the agent prints it (the supervisor writes the log
/// out at least every 250 ms), then its end. Whole lines are shown, each structured event as
/// its transcript line; what is shown live is redacted again here, because the log is
/// redacted in full only when the slice ends.
fn follow_slice(
    ctx: &mut Ctx,
    project: &loopx_kernel::Project,
    slice: SliceId,
    mut output: LiveOutput,
    listener: Listener,
    mut next: u64,
) -> Result<(), ExpectedError> {
    let mut first = false;
    if next == 1 {
        next = store_next(project)?;
    }
    for polls in 1u64.. {
        // The doorbell says when the slice's events arrive; every few seconds the store is read
        // anyway, in case a ring was lost.
        let rang = listener.wait(FOLLOW_EVERY);
        let mut ended = false;
        if rang || polls % 15 == 0 {
            let store = loopx_kernel::Store::open_read(project)?;
            let fresh = store.read(|s| s.events_from(next, 10_000))?;
            drop(store);
            if let Some(last) = fresh.last() {
                next = last.seq + 1;
            }
            for event in fresh.iter().filter(|e| about_slice(e, Some(slice))) {
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
    /// Whole lines already shown, and of which file: when the slice ends its log is replaced
    /// by a redacted copy (other lengths, the same lines), read on from the same line.
    lines: u64,
    file: Option<FileId>,
    raw: bool,
    /// Read, not yet shown: the start of a line.
    partial: Vec<u8>,
    stripper: loopx_pty::AnsiStripper,
    transcript: loopx_adapters::transcript::LiveTranscript,
    redactor: loopx_kernel::redact::Redactor,
}

impl LiveOutput {
    fn new(log: std::path::PathBuf, shown: Shown, raw: bool) -> LiveOutput {
        LiveOutput {
            log,
            offset: shown.bytes,
            lines: shown.lines,
            file: shown.file,
            raw,
            partial: Vec::new(),
            stripper: loopx_pty::AnsiStripper::default(),
            transcript: loopx_adapters::transcript::LiveTranscript::default(),
            redactor: loopx_kernel::redact::Redactor::for_process_env(&[]),
        }
    }

    /// Prints what the log gained: whole lines only, unless `last`.
    fn print_new(&mut self, ctx: &mut Ctx, last: bool) -> Result<(), ExpectedError> {
        let Ok((mut bytes, file)) = read_log(&self.log, self.offset, 16 << 20) else {
            return Ok(());
        };
        if self.file.is_some_and(|seen| seen != file) {
            // Replaced (redacted at the end): read the new file after the lines shown.
            let Ok((whole, _)) = read_log(&self.log, 0, 256 << 20) else {
                return Ok(());
            };
            let mut skipped = 0;
            let start = whole
                .iter()
                .position(|&b| {
                    skipped += u64::from(b == b'\n');
                    skipped == self.lines && b == b'\n'
                })
                .map_or(if self.lines == 0 { 0 } else { whole.len() }, |i| i + 1);
            self.offset = start as u64;
            self.partial.clear();
            bytes = whole[start..].to_vec();
        }
        self.file = Some(file);
        self.offset += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        let cut = if last {
            self.partial.len()
        } else {
            self.partial
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
        };
        let lines: Vec<u8> = self.partial.drain(..cut).collect();
        if lines.is_empty() {
            return Ok(());
        }
        self.lines += lines.iter().filter(|&&b| b == b'\n').count() as u64;
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
            ctx.line(loopx_pty::clean_text(shown.as_bytes()))?;
        }
        Ok(())
    }
}

fn store_next(project: &loopx_kernel::Project) -> Result<u64, ExpectedError> {
    let store = loopx_kernel::Store::open_read(project)?;
    Ok(store.read(|s| s.event_count())? + 1)
}

fn about_slice(event: &Event, slice: Option<SliceId>) -> bool {
    let Some(wanted) = slice else { return true };
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
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
