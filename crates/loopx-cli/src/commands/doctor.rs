//! `loopx doctor`: is this project's state safe and sound?

use serde::Serialize;

use loopx_kernel::{KernelError, Store};

use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::exit_code;

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
    #[serde(skip)]
    code: u8,
}

impl Check {
    fn pass(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            ok: true,
            detail: detail.into(),
            code: exit_code::OK,
        }
    }

    fn fail(name: &'static str, error: impl Into<ExpectedError>) -> Check {
        let error = error.into();
        Check {
            name,
            ok: false,
            detail: error.render(),
            code: error.exit_code(),
        }
    }
}

pub fn run(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let checks = checks(ctx);
    let failed: Vec<&Check> = checks.iter().filter(|c| !c.ok).collect();
    if ctx.json {
        ctx.json_out(
            &serde_json::json!({ "format_version": 1, "ok": failed.is_empty(), "checks": checks }),
        )?;
    } else {
        for check in &checks {
            let mark = if check.ok {
                ctx.style.green("ok  ")
            } else {
                ctx.style.red("FAIL")
            };
            ctx.line(format!("{mark} {:<12} {}", check.name, check.detail))?;
        }
    }
    match failed.first() {
        None => Ok(()),
        Some(first) => Err(ExpectedError::Reported {
            summary: format!("doctor found {} problem(s)", failed.len()),
            code: first.code,
        }),
    }
}

fn checks(ctx: &Ctx) -> Vec<Check> {
    let mut checks = Vec::new();
    let project = match ctx.project() {
        Ok(project) => project,
        Err(e) => {
            checks.push(Check::fail("project", e));
            return checks;
        }
    };
    checks.push(Check::pass(
        "project",
        format!(
            "{} (private: 0700, owned by you, not a link)",
            project.state_dir().display()
        ),
    ));
    let mut store = match Store::open(&project) {
        Ok(store) => store,
        Err(e) => {
            checks.push(Check::fail("store", e));
            return checks;
        }
    };
    checks.push(Check::pass(
        "store",
        format!(
            "{} opens, schema {}",
            store.path().display(),
            loopx_kernel::store::SCHEMA_VERSION
        ),
    ));
    match store.check_integrity() {
        Ok(true) => checks.push(Check::pass(
            "integrity",
            "redb checksums and allocator state are sound",
        )),
        Ok(false) => checks.push(Check::pass(
            "integrity",
            "redb repaired its allocator state after an interrupted write",
        )),
        Err(e) => checks.push(Check::fail("integrity", e)),
    }
    match store.read(loopx_kernel::check_consistency) {
        Ok(problems) if problems.is_empty() => {
            let events = store.read(|s| s.event_count()).unwrap_or(0);
            checks.push(Check::pass(
                "consistency",
                format!("leases, epochs and {events} events are consistent"),
            ));
        }
        Ok(problems) => {
            let error: KernelError = loopx_kernel::StoreError::Damaged {
                path: store.path().to_path_buf(),
                why: problems.join("; "),
            }
            .into();
            checks.push(Check::fail("consistency", error));
        }
        Err(e) => checks.push(Check::fail("consistency", e)),
    }
    checks.push(match loopx_supervisor::Notifier::load(&project) {
        Ok(Some(_)) => Check::pass("settings", "loopx.toml: notifications on"),
        Ok(None) => Check::pass("settings", "no notification command (loopx.toml)"),
        Err(e) => Check::fail("settings", ExpectedError::Supervisor(e)),
    });
    checks
}
