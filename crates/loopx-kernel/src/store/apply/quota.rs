//! Quota transitions: recording a spend, holds.
//!
//! What an account may spend is not the kernel's to say. A spend carries its account's rules
//! ([`AccountRules`]: the windows and pacing of `loopx-domain`'s `account` module), and the
//! kernel runs them inside the spend's write transaction, on a [`Ledger`] of the state as that
//! transaction sees it: concurrent spends on one account are serialised by the store, so none
//! is lost and none is admitted past the budget. The kernel records the spend, its event, the
//! account the agent spent on, and the holds.
//!
//! When the project's ledger is shared (`account_book.rs`), an account's own state (its
//! windows: [`Ledger::account_get`]) and the holds on an account live in the per-user account
//! book, and the rules run inside the book's write transaction too; an agent's own state (its
//! pacing, its holds) stays in the project.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::op::Applied;
use crate::errors::KernelError;
use crate::ids::{AgentName, GoalId};
use crate::model::{EventKind, HoldSource, QuotaHold, SliceRecord, Spend};
use crate::store::account_book;
use crate::store::kv::{Key, KvWrite};
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;
use crate::time::Timestamp;

/// A spend on one agent's account: an admission (a slice about to run) or usage charged.
#[derive(Debug, Clone)]
pub struct QuotaRequest {
    pub agent: AgentName,
    pub account: String,
    pub tokens: u64,
    pub cost_usd: f64,
    /// When the slice ran (for the goal's share), if it has.
    pub busy: Option<(Timestamp, Timestamp)>,
    /// The goal the slice works for; `None` with one goal active spends on that one.
    pub goal: Option<GoalId>,
    /// The account's rules, which admit the spend and keep the account's state.
    pub rules: Arc<dyn AccountRules>,
}

impl PartialEq for QuotaRequest {
    fn eq(&self, other: &Self) -> bool {
        // Rules are plain settings behind the trait: equal when they print the same.
        (
            &self.agent,
            &self.account,
            self.tokens,
            self.cost_usd,
            self.busy,
            self.goal,
        ) == (
            &other.agent,
            &other.account,
            other.tokens,
            other.cost_usd,
            other.busy,
            other.goal,
        ) && format!("{:?}", self.rules) == format!("{:?}", other.rules)
    }
}

/// What an account may spend, and how a spend changes what it may spend next.
pub trait AccountRules: std::fmt::Debug + Send + Sync {
    /// Admits `spend` (when `admit`; a refusal is [`crate::errors::Conflict::QuotaBlocked`])
    /// and charges it to the account's state on `ledger`, inside the spend's transaction.
    fn charge(
        &self,
        ledger: &Ledger<'_>,
        spend: &QuotaRequest,
        admit: bool,
    ) -> Result<(), KernelError>;
}

/// The quota state as one write transaction sees it, for [`AccountRules`].
pub struct Ledger<'w> {
    w: &'w Writer<'w>,
    goal: Option<(GoalId, f64)>,
    holds: Vec<QuotaHold>,
    /// The account book's write transaction, when the ledger is shared.
    book: Option<&'w dyn KvWrite>,
}

impl std::fmt::Debug for Ledger<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("now", &self.w.now)
            .field("goal", &self.goal)
            .field("holds", &self.holds)
            .finish_non_exhaustive()
    }
}

impl Ledger<'_> {
    /// The transaction's time.
    pub fn now(&self) -> Timestamp {
        self.w.now
    }

    /// The rules' own state under `key` (see `Snapshot::quota_value` to read it outside).
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KernelError> {
        self.w.quota_get(key)
    }

    /// Writes the rules' own state under `key`; the kernel's own keys (the account an agent
    /// spent on, the holds) are not theirs to write.
    pub fn put<T: Serialize>(&self, key: &str, value: &T) -> Result<(), KernelError> {
        rules_key(key)?;
        self.w.quota_put(key, value)
    }

    /// The account's own state under `key`, shared by every project spending on the account
    /// when the ledger is shared (see `Snapshot::account_value` to read it outside). State the
    /// book does not have yet is the project's own, as it kept it before it shared its ledger:
    /// a window half spent is not forgotten by the switch.
    pub fn account_get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KernelError> {
        if let Some(book) = self.book
            && let Some(found) = account_book::get(book, key)?
        {
            return Ok(Some(found));
        }
        self.w.quota_get(key)
    }

    /// Writes the account's own state under `key` (where [`Self::account_get`] reads it).
    pub fn account_put<T: Serialize>(&self, key: &str, value: &T) -> Result<(), KernelError> {
        rules_key(key)?;
        match self.book {
            Some(book) => account_book::put(book, key, value),
            None => self.w.quota_put(key, value),
        }
    }

    /// The holds on the spending agent and its account.
    pub fn holds(&self) -> &[QuotaHold] {
        &self.holds
    }

    /// Forgets a hold (a vendor's, that ended and that this spend probed).
    pub fn forget_hold(&self, key: &str) -> Result<(), KernelError> {
        if let Some(book) = self.book {
            book.remove(tables::QUOTA, &Key::text(&hold_key(key)))?;
        }
        self.w.quota_remove(&hold_key(key)).map(drop)
    }

    /// The spend's goal and its share, if that goal is active in this transaction: a `goal
    /// done` committed while the caller prepared the spend must not leave it on a stale goal.
    pub fn goal(&self) -> Option<(GoalId, f64)> {
        self.goal
    }

    /// The spend's goal's slice time since `since`: charged spends, and running slices to now.
    pub fn goal_busy(&self, since: Timestamp) -> Result<Vec<(u64, u64)>, KernelError> {
        let running: Vec<SliceRecord> = self
            .w
            .running_ids()?
            .into_iter()
            .map(|id| {
                self.w
                    .require(tables::SLICES, id, "slice", crate::ids::SliceId(id))
            })
            .collect::<Result<_, _>>()?;
        Ok(busy_intervals(
            &self.w.spends_since(since)?,
            &running,
            self.goal.map(|(id, _)| id),
            self.w.now,
        ))
    }
}

/// Refuses a key that is the kernel's own (`account/`, `hold/`, `spender/`) to the rules.
fn rules_key(key: &str) -> Result<(), KernelError> {
    if ["account/", "hold/", "spender/"]
        .iter()
        .any(|own| key.starts_with(own))
    {
        return Err(crate::errors::Invalid::Other(format!(
            "`{key}` is the kernel's own quota entry: an account's rules do not write it"
        ))
        .into());
    }
    Ok(())
}

/// The account an agent last spent on: the decision reserves what a running slice is
/// expected to spend on its agent's account, and the kernel does not read profiles.
pub(crate) fn account_key(agent: &AgentName) -> String {
    format!("account/{agent}")
}

pub(crate) fn hold_key(key: &str) -> String {
    format!("hold/{key}")
}

/// The hold keys that apply to an agent: its account's and its own.
pub fn hold_keys(agent: &AgentName, account: &str) -> [String; 2] {
    [account.to_owned(), format!("agent:{agent}")]
}

/// Slice time of the goal inside the share window: charged spends plus running slices.
pub fn busy_intervals(
    spends: &[Spend],
    running: &[SliceRecord],
    goal: Option<GoalId>,
    now: Timestamp,
) -> Vec<(u64, u64)> {
    let mut busy: Vec<(u64, u64)> = spends
        .iter()
        // Only the goal's own slice time counts against its share.
        .filter(|s| goal.is_none() || s.goal == goal)
        .filter_map(|s| s.busy.map(|(a, b)| (a.0, b.0)))
        .collect();
    // A running slice of another goal is not this goal's time (one an older loopx began
    // recorded no goal: it counts).
    busy.extend(
        running
            .iter()
            .filter(|s| goal.is_none() || s.goal.is_none() || s.goal == goal)
            .map(|s| (s.started_at.0, now.0)),
    );
    busy
}

pub(super) fn spend(
    w: &Writer<'_>,
    req: QuotaRequest,
    admit: bool,
) -> Result<Applied, KernelError> {
    let now = w.now;
    let keys = hold_keys(&req.agent, &req.account);
    if w.quota_get::<String>(&account_key(&req.agent))?.as_deref() != Some(req.account.as_str()) {
        w.quota_put(&account_key(&req.agent), &req.account)?;
    }
    let goal = match req.goal {
        Some(goal) => Some(goal),
        // Several goals active and none named: the spend is the account's, of no goal.
        None => super::which_goal::active_goal_if_one(w)?,
    };
    // The goal as this transaction sees it: one marked done or paused while the caller
    // prepared the spend has no share to keep.
    let goal = match goal {
        Some(id) => w
            .get::<crate::model::Goal>(tables::GOALS, id.0)?
            .filter(|g| g.status == crate::model::GoalStatus::Active)
            .map(|g| (g.id, g.share)),
        None => None,
    };
    let mut holds: Vec<QuotaHold> = w.quota_holds()?;
    holds.retain(|h| keys.contains(&h.key));
    match w.account_book()? {
        None => {
            let ledger = Ledger {
                w,
                goal,
                holds,
                book: None,
            };
            req.rules.charge(&ledger, &req, admit)?;
        }
        Some(book) => book.write(|kv| {
            holds.extend(
                super::super::reads::holds(kv)?
                    .into_iter()
                    .filter(|h| keys.contains(&h.key)),
            );
            let ledger = Ledger {
                w,
                goal,
                holds,
                book: Some(kv),
            };
            req.rules.charge(&ledger, &req, admit)?;
            book.record_spender(kv, &req.account, req.tokens, req.cost_usd, now)
        })?,
    }
    let seq = w.next_id(counter::SPEND)?;
    let record = Spend {
        seq,
        agent: req.agent.clone(),
        account: req.account.clone(),
        goal: goal.map(|(id, _)| id),
        admitted: admit,
        tokens: req.tokens,
        cost_usd: req.cost_usd,
        busy: req.busy,
        at: now,
    };
    w.put(tables::SPENDS, seq, &record)?;
    w.event(EventKind::QuotaSpent {
        spend: seq,
        agent: req.agent,
        account: req.account,
        admitted: admit,
        tokens: req.tokens,
        cost_usd: req.cost_usd,
    })?;
    Ok(Applied::Spend(record))
}

pub(super) fn hold(
    w: &Writer<'_>,
    key: String,
    until: Option<Timestamp>,
    reason: String,
    source: HoldSource,
) -> Result<Applied, KernelError> {
    if key.trim().is_empty() {
        return Err(crate::errors::Invalid::Empty { field: "account" }.into());
    }
    crate::limits::check_text("reason", &reason, crate::limits::SUMMARY, "")?;
    if let Some(at) = until
        && (at <= w.now || at > w.now.plus(crate::time::MAX_DURATION))
        && source == HoldSource::Manual
    {
        return Err(crate::errors::Invalid::Other(format!(
            "a hold until {at} is out of range: it must end after now and within a year\n(hint: `loopx quota pause` holds until resumed)"
        ))
        .into());
    }
    let record = QuotaHold {
        key: key.clone(),
        until,
        reason: reason.clone(),
        source,
        set_by: w.actor.to_owned(),
        set_at: w.now,
    };
    // An account's hold is every project's on it when the ledger is shared; an agent's is its
    // project's.
    let book = match key.starts_with("agent:") {
        true => None,
        false => w.account_book()?,
    };
    let kept = match book {
        Some(book) if source == HoldSource::Vendor => {
            // Every project on the account reads it: say which project the limit was met in
            // (a forged one in one project holds the others too; `docs/permissions.md`).
            let record = QuotaHold {
                reason: crate::limits::clip(
                    &format!("{} (in project {})", record.reason, book.project()),
                    crate::limits::SUMMARY,
                ),
                ..record.clone()
            };
            book.write(|kv| keep_hold(kv, record, w.now))?
        }
        Some(book) => book.write(|kv| keep_hold(kv, record.clone(), w.now))?,
        None => keep_hold(w.kv, record.clone(), w.now)?,
    };
    if let Some(old) = kept {
        return Ok(Applied::Hold(old));
    }
    w.event(EventKind::QuotaHeld {
        key,
        until,
        reason,
        source,
    })?;
    Ok(Applied::Hold(record))
}

/// Writes `record` unless a stronger hold is there: the one kept instead, if so. A vendor's
/// reset never shortens a hold that lasts longer (a person's pause, or a later reset already
/// seen): the stronger hold stays as it is, with its own reason and source. A person's hold
/// replaces whatever was there: they may know the limit is gone.
fn keep_hold(
    kv: &dyn KvWrite,
    record: QuotaHold,
    now: Timestamp,
) -> Result<Option<QuotaHold>, KernelError> {
    let existing: Option<QuotaHold> = account_book::get(kv, &hold_key(&record.key))?;
    if let (Some(old), Some(new), HoldSource::Vendor) = (&existing, record.until, record.source)
        && old.ends(now).is_none_or(|u| u >= new)
    {
        return Ok(existing);
    }
    account_book::put(kv, &hold_key(&record.key), &record)?;
    Ok(None)
}

/// Whether `key` is on hold, in the project or in the account book.
pub(super) fn held(w: &Writer<'_>, key: &str) -> Result<bool, KernelError> {
    Ok(all_holds(w)?.iter().any(|h| h.key == key))
}

/// The project's holds and, when the ledger is shared, the account book's.
fn all_holds(w: &Writer<'_>) -> Result<Vec<QuotaHold>, KernelError> {
    let mut holds = w.quota_holds()?;
    if let Some(book) = w.account_book()? {
        holds.extend(book.read(|kv| super::super::reads::holds(kv))?);
    }
    Ok(holds)
}

pub(super) fn resume(w: &Writer<'_>, key: Option<String>) -> Result<Applied, KernelError> {
    let holds = all_holds(w)?;
    let mut keys: Vec<String> = holds
        .iter()
        .map(|h| h.key.clone())
        .filter(|k| key.as_ref().is_none_or(|want| want == k))
        .collect();
    // A key held in the project and in the book (set before the ledger was shared) is one.
    keys.sort();
    keys.dedup();
    if keys.is_empty() {
        let what = key.map_or_else(
            || "nothing is on hold".to_owned(),
            |k| format!("`{k}` is not on hold"),
        );
        return Err(crate::errors::Invalid::Other(format!(
            "{what}\n(hint: `loopx quota status` shows the holds)"
        ))
        .into());
    }
    if let Some(book) = w.account_book()? {
        book.write(|kv| {
            for k in &keys {
                kv.remove(tables::QUOTA, &Key::text(&hold_key(k)))?;
            }
            Ok(())
        })?;
    }
    for k in &keys {
        w.quota_remove(&hold_key(k))?;
    }
    w.event(EventKind::QuotaResumed { keys: keys.clone() })?;
    Ok(Applied::Resumed(keys))
}
