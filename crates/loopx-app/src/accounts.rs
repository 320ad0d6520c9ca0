//! The person's account book, across projects (`loopx quota status --all`): each account of
//! the shared ledger, the projects spending on it, its holds and its windows.

use std::path::Path;
use std::time::Duration;

use loopx_kernel::Timestamp;
use loopx_kernel::model::QuotaHold;
use loopx_kernel::store::{AccountBook, Spender};
use loopx_quota::WindowState;
use serde::Serialize;

use crate::AppError;

/// The account book's file in the person's state directory (`$XDG_STATE_HOME/loopx`, the
/// directory of the list of projects: `projects.rs`).
pub const ACCOUNT_BOOK_FILE: &str = "accounts.redb";

/// `quota status --all`: every account of the book.
#[derive(Debug, Serialize)]
pub struct AccountsStatus {
    pub format_version: u32,
    /// The book's file.
    pub book: String,
    pub accounts: Vec<AccountReport>,
}

/// One account of the book.
#[derive(Debug, Serialize)]
pub struct AccountReport {
    pub account: String,
    /// The projects that spent on it, most recent first.
    pub projects: Vec<Spender>,
    pub holds: Vec<QuotaHold>,
    pub windows: Vec<BookWindow>,
}

/// What an account spent in one of its windows (the limits are each agent's profile's).
#[derive(Debug, Serialize)]
pub struct BookWindow {
    pub period_secs: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    /// When the window started, and when it resets (`None`: no spend yet).
    pub started_at: Option<Timestamp>,
    pub resets_at: Option<Timestamp>,
}

/// Reads the account book at `book` (an empty list when no project has spent yet: a read
/// never creates it).
pub fn accounts_status(book: &Path, wait: Duration) -> Result<AccountsStatus, AppError> {
    let accounts = match AccountBook::open(book, wait, "", false)? {
        Some(opened) => opened.accounts::<WindowState>()?,
        None => Vec::new(),
    };
    let accounts = accounts
        .into_iter()
        .map(|mut a| {
            a.projects.sort_by_key(|p| std::cmp::Reverse(p.last_at));
            AccountReport {
                account: a.account,
                projects: a.projects,
                holds: a.holds,
                windows: a.windows.into_iter().map(window).collect(),
            }
        })
        .collect();
    Ok(AccountsStatus {
        format_version: 1,
        book: book.display().to_string(),
        accounts,
    })
}

fn window((period_ms, state): (u64, WindowState)) -> BookWindow {
    let opened = state.start != 0;
    BookWindow {
        period_secs: period_ms / 1000,
        tokens: state.tokens,
        cost_usd: state.cost_micros as f64 / loopx_quota::window::MICROS,
        started_at: opened.then_some(Timestamp(state.start)),
        resets_at: opened.then(|| Timestamp(state.start.saturating_add(period_ms))),
    }
}
