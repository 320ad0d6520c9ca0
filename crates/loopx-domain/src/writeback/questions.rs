//! The questions a slice's end puts to a person about its agent, not its work: a login to
//! renew (`auth_failed`), a CLI that could not be started (`spawn_failed`). Each blocks the
//! agent (a login holds its whole account) until a person answers `retry`; peers that meet the
//! same trouble find the same gate open (the kernel asks once per kind).

use loopx_kernel::limits::{self, bounded};
use loopx_kernel::model::{Blocks, GateKind, HoldSource};
use loopx_kernel::store::NewHold;
use loopx_kernel::store::{NewGate, Op};

use crate::writeback::Finished;

/// The agent could not be started: it is blocked until a person answers a gate that names why
/// (and how to install its CLI), rather than retried at its pace. Peers find the same gate.
pub fn spawn_gate(f: &Finished<'_>) -> Op {
    let adapter = f.cli.adapter;
    let install = f
        .cli
        .install
        .map(|how| format!(" (`{adapter}` installs with: {how})"))
        .unwrap_or_default();
    let question = bounded(
        &format!(
            "`{}` could not be started: {}{install}. Fix it, then answer `retry`?",
            f.record.agent,
            f.judged
                .reason
                .strip_prefix("the agent could not be started: ")
                .unwrap_or(&f.judged.reason)
        ),
        limits::QUESTION,
    );
    let mut gate = NewGate {
        question,
        options: vec!["retry".to_owned()],
        context: bounded(
            &format!(
                "slice {} ended `spawn_failed`: {}\n`loopx doctor` checks every agent's profile and program; `loopx agent set {} --profile P` changes its profile.",
                f.record.id, f.judged.reason, f.record.agent
            ),
            limits::DETAIL,
        ),
        blocks: Blocks::Agent(f.record.agent.clone()),
        kind: GateKind::Spawn {
            agent: f.record.agent.clone(),
        },
    };
    // The reason is the launcher's words: should they make a question the kernel refuses,
    // the question still names the agent and the way out.
    if gate.check().is_err() {
        gate.question = format!(
            "`{}` could not be started: fix its profile or install its CLI, then answer `retry`?",
            f.record.agent
        );
    }
    Op::GateAsk(gate)
}

/// The agent is not logged in: its account is held until a person answers a gate that names
/// the fix (the kernel lifts the hold with the answer). Peers on the account find the same
/// gate open rather than a second one.
pub fn login_gate(f: &Finished<'_>) -> Vec<Op> {
    let account = f.quota.account.clone();
    let (login, adapter) = (f.cli.login, f.cli.adapter);
    let fix = login.map_or_else(
        || format!("log `{adapter}` in as its documentation says (or give loopx its API key)"),
        str::to_owned,
    );
    let question = bounded(
        &format!(
            "`{}` is not logged in (account `{account}`): {fix}, then answer `retry`?",
            f.record.agent
        ),
        limits::QUESTION,
    );
    vec![
        Op::QuotaHold(NewHold {
            key: account.clone(),
            until: None,
            reason: bounded(
                &format!(
                    "`{}` is not logged in (slice {}): held until a person answers the login gate",
                    f.record.agent, f.record.id
                ),
                limits::SUMMARY,
            ),
            source: HoldSource::Vendor,
        }),
        Op::GateAsk(NewGate {
            question,
            options: vec!["retry".to_owned()],
            context: bounded(
                &format!(
                    "slice {} ended `auth_failed`: {}",
                    f.record.id, f.judged.reason
                ),
                limits::DETAIL,
            ),
            blocks: Blocks::Agent(f.record.agent.clone()),
            kind: GateKind::Login { account },
        }),
    ]
}
