//! `full` permission runs only after a person approved the profile's exact content
//! (`docs/permissions.md`).
//!
//! The approval is a gate that loopx opens itself. It is bound to the agent, the profile and the
//! profile's [content hash](loopx_adapters::ContentHash) by one fixed-format line in the gate's
//! context, `approval: agent=A profile=P sha256=HASH`, which is matched exactly: the question
//! text is for the person and is never parsed. Only a gate asked by loopx counts (an agent cannot
//! forge one by asking a look-alike question), and only its `approve` option approves.
//!
//! The newest matching gate decides: answered `approve` runs at `full`; open asks (the gate
//! blocks the agent, so the decision asks anyway until it is answered); answered anything else
//! stops the agent; withdrawn, or none at all, opens a new gate. Editing the profile or its
//! adapter changes the hash, so no earlier answer matches and loopx asks again.
//!
//! A profile on a **project adapter** (`.loopx/adapters/NAME.toml`, not one shipped with loopx)
//! needs the same approval at every level: the adapter names the program loopx starts, and a
//! file in `.loopx/` may have been planted by an agent of an unsandboxed slice. One approval of
//! the content hash covers both reasons.

use loopx_adapters::NotifyConfig;
use loopx_adapters::PermissionLevel;
use loopx_kernel::model::{Blocks, Gate, GateKind, GateState, Goal};
use loopx_kernel::store::NewGate;
use loopx_kernel::{Project, Store, Timestamp};
use loopx_quota::Decision;

use crate::agent::AgentSetup;

/// Who opens approval gates: the supervisor itself, never an agent or a person.
pub const ACTOR: &str = loopx_vocab::actor::LOOPX;

/// How every approval gate's context begins (`approval: agent=…`, `approval: notify …`).
pub const APPROVAL_LINE: &str = "approval: ";

/// Whether `gate` is one of loopx's approvals (a `full` profile, a project adapter, the
/// notification command): asked by loopx itself, its context starting with the approval line.
/// Surfaces off the machine (a Lark card) do not offer them unless told to.
pub fn is_approval(gate: &Gate) -> bool {
    gate.asked_by == ACTOR && gate.context.starts_with(APPROVAL_LINE)
}

/// The option that approves; any other answer denies.
pub const APPROVE: &str = "approve";
const DENY: &str = "deny";

/// The level a slice may run at, or the decision that holds it back.
#[derive(Debug)]
pub enum Permission {
    Run(PermissionLevel),
    /// Not approved (yet): nothing may be claimed or spawned.
    Held(Decision),
}

/// What an agent's `full` level is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub agent: String,
    pub profile: String,
    pub sha256: String,
}

impl Binding {
    fn of(setup: &AgentSetup) -> Binding {
        Binding {
            agent: setup.agent.name.to_string(),
            profile: setup.agent.profile.clone(),
            sha256: setup.loaded.content_hash.to_string(),
        }
    }

    /// The context line an approval gate carries, matched exactly.
    pub fn line(&self) -> String {
        format!(
            "{APPROVAL_LINE}agent={} profile={} sha256={}",
            self.agent, self.profile, self.sha256
        )
    }

    fn question(&self, why: Why<'_>) -> String {
        let short: String = self.sha256.chars().take(8).collect();
        let tail = match why {
            Why::Full => "with full permission: no sandbox, any command, network?".to_owned(),
            Why::ProjectAdapter(file) => format!("with the project's own adapter ({file})?"),
            Why::FullOnProjectAdapter(file) => format!(
                "with full permission (no sandbox, any command, network) and the project's own adapter ({file})?"
            ),
        };
        format!(
            "Allow agent `{}` to run profile `{}` (sha256 {short}…) {tail}",
            self.agent, self.profile
        )
    }
}

/// Whether `gate` is an approval loopx asked, bound by `line` in its context.
fn binds(gate: &Gate, line: &str) -> bool {
    gate.asked_by == ACTOR && gate.context.lines().any(|l| l.trim_end() == line)
}

/// Where the approval of a binding stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Approved,
    Denied(Gate),
    Open(Gate),
    /// Never asked, or the last ask was withdrawn.
    Unasked,
}

/// The newest gate bound to `binding` decides (`gates` in any order).
pub fn verdict(gates: &[Gate], binding: &Binding) -> Verdict {
    verdict_of(gates, &binding.line())
}

/// The newest approval gate whose context carries `line` decides (`gates` in any order).
pub fn verdict_of(gates: &[Gate], line: &str) -> Verdict {
    let Some(gate) = newest_bound(gates, line) else {
        return Verdict::Unasked;
    };
    match gate.state {
        GateState::Open => Verdict::Open(gate.clone()),
        GateState::Withdrawn => Verdict::Unasked,
        GateState::Answered if approves(gate) => Verdict::Approved,
        GateState::Answered => Verdict::Denied(gate.clone()),
    }
}

/// The newest approval gate whose context carries `line`: the one that decides.
pub fn newest_bound<'g>(gates: &'g [Gate], line: &str) -> Option<&'g Gate> {
    gates
        .iter()
        .filter(|g| binds(g, line))
        .max_by_key(|g| (g.created_at, g.id.0))
}

/// Only the `approve` option approves; free text, `deny` or a missing answer do not.
fn approves(gate: &Gate) -> bool {
    gate.answer
        .as_ref()
        .and_then(|a| a.option)
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| gate.options.get(i))
        .is_some_and(|o| o == APPROVE)
}

/// The level the slice runs at: the profile's, capped by the goal's; `full` only when approved.
///
/// Opens the approval gate when there is none. Called before the todo is claimed, so an
/// unapproved agent takes nothing.
pub fn permission(
    store: &Store,
    setup: &AgentSetup,
    goal: Option<&Goal>,
    now: Timestamp,
) -> Result<Permission, loopx_kernel::KernelError> {
    let cap = goal.map_or(PermissionLevel::Full, |g| g.permission);
    let level = setup.loaded.profile.permission.min(cap);
    let adapter = &setup.loaded.adapter;
    let why = match (level, adapter.file.starts_with("<builtin>/")) {
        (PermissionLevel::Full, true) => Why::Full,
        (PermissionLevel::Full, false) => Why::FullOnProjectAdapter(&adapter.file),
        (_, false) => Why::ProjectAdapter(&adapter.file),
        (_, true) => return Ok(Permission::Run(level)),
    };
    let binding = Binding::of(setup);
    let gates = store.read(|s| s.gates())?;
    let gate = match verdict(&gates, &binding) {
        Verdict::Approved => return Ok(Permission::Run(level)),
        Verdict::Denied(gate) => return Ok(Permission::Held(denied(&binding, &gate, why))),
        Verdict::Open(gate) => gate,
        Verdict::Unasked => {
            store.run(ask(&binding, &setup.loaded.profile.file, why), ACTOR, now)?
        }
    };
    Ok(Permission::Held(asking(&binding, &gate, why)))
}

/// Why a profile needs a person's approval before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why<'a> {
    /// `permission = "full"`.
    Full,
    /// Its adapter is the project's own file (named).
    ProjectAdapter(&'a str),
    /// Both.
    FullOnProjectAdapter(&'a str),
}

impl Why<'_> {
    /// What is to be approved, for the question and the reasons.
    fn what(self) -> &'static str {
        match self {
            Why::Full => "with full permission",
            Why::ProjectAdapter(_) => "with the project's own adapter",
            Why::FullOnProjectAdapter(_) => "with full permission and the project's own adapter",
        }
    }
}

/// The options of every approval gate: `approve` (the first) and `deny`.
pub fn approval_options() -> Vec<String> {
    vec![APPROVE.to_owned(), DENY.to_owned()]
}

/// The approval gate for a binding; it blocks the agent.
fn ask(binding: &Binding, file: &str, why: Why<'_>) -> NewGate {
    let full = format!(
        "The profile `{}` ({file}) sets `permission = \"full\"`: the agent runs with its \
         adapter's `full` flags, outside the vendor's sandbox. loopx's own limits still apply.",
        binding.profile
    );
    let adapter = |adapter: &str| {
        format!(
            "The profile `{}` uses the project's own adapter {adapter}, which names the program \
             loopx starts and its arguments; read it before you approve.",
            binding.profile
        )
    };
    let reasons = match why {
        Why::Full => full,
        Why::ProjectAdapter(file) => adapter(file),
        Why::FullOnProjectAdapter(file) => format!("{full} {}", adapter(file)),
    };
    NewGate {
        question: binding.question(why),
        options: approval_options(),
        context: format!(
            "{}\n{reasons} An approval holds until the profile or its adapter changes.",
            binding.line(),
        ),
        blocks: Blocks::Agent(
            binding
                .agent
                .parse()
                .expect("the binding's agent is a registered name"),
        ),
        kind: GateKind::Question,
    }
}

fn asking(binding: &Binding, gate: &Gate, why: Why<'_>) -> Decision {
    Decision::Ask {
        about: loopx_quota::AskAbout::OpenGate,
        gate: Some((gate.id, gate.question.clone())),
        reason: format!(
            "`{}` needs a person's approval to run profile `{}` {}",
            binding.agent,
            binding.profile,
            why.what()
        ),
    }
}

fn denied(binding: &Binding, gate: &Gate, why: Why<'_>) -> Decision {
    let instead = match why {
        Why::Full => "or lower its `permission`",
        Why::ProjectAdapter(_) | Why::FullOnProjectAdapter(_) => {
            "or use an adapter shipped with loopx"
        }
    };
    Decision::stop(format!(
        "running profile `{}` {} was denied in gate {} (answer `{}`); edit the profile \
             to ask again (any change asks again), {instead}",
        binding.profile,
        why.what(),
        gate.id,
        gate.answer.as_ref().map_or("", |a| a.text.as_str())
    ))
}

// The notification command (`[notify]` in `loopx.toml`) runs outside every slice with loopx's
// whole environment: like a `full` profile it runs only once a person approved its exact text,
// bound by the line `approval: notify sha256=HASH` (`docs/cli.md`, "Notifications").

/// The line that binds an approval to `config`'s exact text and timeout.
pub fn notify_approval_line(config: &NotifyConfig) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"loopx-notify-v1\0");
    hasher.update(config.command.as_bytes());
    hasher.update(format!("\0{}", config.timeout.as_millis()).as_bytes());
    let hash = hex::encode(hasher.finalize());
    format!("{}notify sha256={hash}", APPROVAL_LINE)
}

/// Where the approval of `config` stands, in words: `approved in q3`, `waits for a person's
/// approval in q3`, `denied in q3`, `not asked yet (the next loopx run asks)`.
pub fn notify_approval_state(gates: &[Gate], config: &NotifyConfig) -> String {
    use Verdict;
    let line = notify_approval_line(config);
    match verdict_of(gates, &line) {
        Verdict::Approved => match newest_bound(gates, &line) {
            Some(gate) => format!("approved in {}", gate.id),
            None => "approved".to_owned(),
        },
        Verdict::Open(gate) => format!("waits for a person's approval in {}", gate.id),
        Verdict::Denied(gate) => format!("denied in {}", gate.id),
        Verdict::Unasked => "not approved yet (the next loopx run asks)".to_owned(),
    }
}

/// The gate loopx opens to ask a person to approve `config`.
pub fn notify_approval_gate(config: &NotifyConfig) -> NewGate {
    NewGate {
        question: format!(
            "Run the notification command `{}` from .loopx/loopx.toml (outside every slice, with loopx's environment) on loopx events?",
            loopx_kernel::limits::clip(&config.command, 200)
        ),
        options: approval_options(),
        context: format!(
            "{}\nThe command runs outside every slice, with loopx's whole environment. An approval holds until the command or its timeout changes; until then no notification runs.",
            notify_approval_line(config)
        ),
        blocks: Blocks::Nothing,
        kind: GateKind::Question,
    }
}

/// A person set `config` as the notification command themselves (`loopx notify set`): it is
/// approved at once, as `person` (`human:<user>`), on the record as any approval is — the
/// approval gate for its exact text (the open one `loopx run` asked, else a new one loopx
/// opens) answered `approve`. Already approved: nothing is written. Returns the gate.
pub fn approve_notify_command(
    project: &Project,
    config: &NotifyConfig,
    person: &str,
    now: Timestamp,
) -> Result<Gate, loopx_kernel::KernelError> {
    use Verdict;
    use loopx_kernel::store::{AnswerChoice, AnswerGate};
    let store = Store::open(project)?;
    let gates = store.read(|s| s.gates())?;
    let gate = match verdict_of(&gates, &notify_approval_line(config)) {
        // The newest gate bound to this text approved it: it stands.
        Verdict::Approved => {
            if let Some(gate) = newest_bound(&gates, &notify_approval_line(config)) {
                return Ok(gate.clone());
            }
            store.run(notify_approval_gate(config), ACTOR, now)?
        }
        Verdict::Open(gate) => gate,
        Verdict::Denied(_) | Verdict::Unasked => {
            store.run(notify_approval_gate(config), ACTOR, now)?
        }
    };
    let answer = AnswerGate {
        gate: gate.id,
        choice: AnswerChoice::Option(1),
        slice: None,
        note: Some("set by the person with `loopx notify set`".to_owned()),
    };
    store.run(answer, person, now)
}

#[cfg(test)]
mod tests {
    use loopx_kernel::GateId;
    use loopx_kernel::model::Answer;

    use super::*;

    fn binding() -> Binding {
        Binding {
            agent: "exec".into(),
            profile: "danger".into(),
            sha256: "1a2b3c4d".repeat(8),
        }
    }

    fn gate(id: u64, b: &Binding, state: GateState, option: Option<u32>) -> Gate {
        let new = ask(b, ".loopx/profiles/danger.toml", Why::Full);
        Gate {
            id: GateId(id),
            question: new.question,
            options: new.options,
            context: new.context,
            blocks: new.blocks,
            kind: new.kind,
            asked_by: ACTOR.into(),
            state,
            answer: (state == GateState::Answered).then(|| Answer {
                text: "x".into(),
                option,
                by: "human:ann".into(),
                at: Timestamp(id),
            }),
            created_at: Timestamp(id),
            answered_under: 0,
        }
    }

    #[test]
    fn the_question_is_concrete_and_names_the_hash() {
        let q = binding().question(Why::Full);
        loopx_kernel::question::check_question(&q).expect("a concrete question");
        assert!(q.contains("`danger` (sha256 1a2b3c4d…)"), "{q}");
    }

    #[test]
    fn only_the_approve_option_of_the_newest_gate_approves() {
        let b = binding();
        assert_eq!(verdict(&[], &b), Verdict::Unasked);
        let approved = gate(1, &b, GateState::Answered, Some(1));
        assert_eq!(
            verdict(std::slice::from_ref(&approved), &b),
            Verdict::Approved
        );
        let denied = gate(2, &b, GateState::Answered, Some(2));
        assert!(matches!(
            verdict(&[approved.clone(), denied.clone()], &b),
            Verdict::Denied(_)
        ));
        let text = gate(3, &b, GateState::Answered, None);
        assert!(matches!(verdict(&[text], &b), Verdict::Denied(_)));
        let open = gate(4, &b, GateState::Open, None);
        assert!(matches!(
            verdict(&[denied, open], &b),
            Verdict::Open(g) if g.id == GateId(4)
        ));
        let withdrawn = gate(5, &b, GateState::Withdrawn, None);
        assert_eq!(verdict(&[approved, withdrawn], &b), Verdict::Unasked);
    }

    #[test]
    fn an_approval_binds_the_hash_the_agent_and_the_asker() {
        let b = binding();
        let approved = gate(1, &b, GateState::Answered, Some(1));
        let edited = Binding {
            sha256: "ff".repeat(32),
            ..b.clone()
        };
        assert_eq!(
            verdict(std::slice::from_ref(&approved), &edited),
            Verdict::Unasked
        );
        let other = Binding {
            agent: "other".into(),
            ..b.clone()
        };
        assert_eq!(
            verdict(std::slice::from_ref(&approved), &other),
            Verdict::Unasked
        );
        let forged = Gate {
            asked_by: "agent:exec".into(),
            ..approved.clone()
        };
        assert_eq!(verdict(&[forged], &b), Verdict::Unasked);
        // A line that merely contains the binding is not it.
        let longer = Gate {
            context: format!("{}0", b.line()),
            ..approved
        };
        assert_eq!(verdict(&[longer], &b), Verdict::Unasked);
    }
}
