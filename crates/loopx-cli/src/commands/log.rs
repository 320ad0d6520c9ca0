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
        Some(slice) => store
            .read(|s| s.slice(slice))?
            .map(|r| r.log_sha256)
            .unwrap_or_default(),
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
        let log = project
            .state_dir()
            .join("slices")
            .join(format!("{slice}.log"));
        // The log is loopx's, capped at the profile's `max_output`; a planted FIFO or device
        // in its place is refused, not read forever.
        if let Ok(output) = loopx_adapters::open_regular(&log).and_then(|f| {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(f, 256 << 20), &mut bytes)?;
            Ok(bytes)
        }) {
            if args.raw {
                // Asked for by name: the bytes as the agent printed them (masked secrets aside).
                ctx.flush()?;
                std::io::Write::write_all(&mut ctx.out, &output)?;
            } else {
                ctx.line(format!("--- output of {slice} ({}) ---", log.display()))?;
                let sha = sha256_hex(&output);
                if !recorded_sha.is_empty() && sha != recorded_sha {
                    ctx.line(ctx.style.red(&format!(
                        "warning: this log was changed after loopx wrote it (sha256 {} now, {} when {slice} ended): it is not what the agent printed",
                        &sha[..12],
                        &recorded_sha[..recorded_sha.len().min(12)]
                    )))?;
                }
                // Escape sequences are the agent's: shown as text, never obeyed.
                let mut stripped = Vec::with_capacity(output.len());
                loopx_pty::AnsiStripper::default().feed(&output, &mut stripped);
                ctx.line(loopx_pty::clean_text(&stripped))?;
            }
        }
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
