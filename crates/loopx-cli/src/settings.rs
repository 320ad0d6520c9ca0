//! The process's settings from the environment, read once here, at the edge, and handed to the
//! libraries that need them: no library reads an environment variable of loopx's.
//!
//! Most are drills and tests of rare paths (a host with a wrong clock, several pretend hosts
//! on one machine, a short lease, a busy store, a slow git); `LOOPX_STORE_URL` names where the
//! store is. Each is documented in `docs/cli.md` ("Environment").

use std::time::Duration;

/// What the environment says, parsed.
#[derive(Debug, Default)]
pub struct Settings {
    /// `LOOPX_STORE_URL`: the store's database, instead of `[store] url` or the redb file.
    pub store_url: Option<String>,
    /// `LOOPX_STORE_WAIT_MS`: how long to wait for a busy store.
    pub store_wait: Option<Duration>,
    /// `LOOPX_CLOCK_SKEW_MS`: this process's wall clock that far off (negative: behind).
    pub clock_skew_ms: i64,
    /// `LOOPX_LEASE_MAX`: the longest claim before a renewal.
    pub lease_max: Option<Duration>,
    /// `LOOPX_HOST_ID`: a pretend host's name.
    pub host_name: Option<String>,
    /// `LOOPX_GIT_TIMEOUT`: how long one git command may take.
    pub git_timeout: Option<Duration>,
    /// `$XDG_STATE_HOME/loopx`, else `$HOME/.local/state/loopx`: the person's registry of
    /// projects (`docs/projects.md`); none when neither is set.
    pub state_dir: Option<std::path::PathBuf>,
}

impl Settings {
    /// Reads the environment; a value that does not parse is named in a warning and left at
    /// its default.
    pub fn from_env() -> Settings {
        let text = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let warn = |name: &str, value: &str, want: &str| {
            tracing::warn!("{name}=`{value}` is not {want}; using the default");
        };
        let duration = |name: &str, at_least: Duration, want: &str| {
            text(name).and_then(|value| match humantime::parse_duration(value.trim()) {
                Ok(d) if d >= at_least && !d.is_zero() => Some(d),
                _ => {
                    warn(name, &value, want);
                    None
                }
            })
        };
        Settings {
            store_url: text("LOOPX_STORE_URL").map(|u| u.trim().to_owned()),
            store_wait: text("LOOPX_STORE_WAIT_MS").and_then(|ms| match ms.trim().parse() {
                Ok(ms) => Some(Duration::from_millis(ms)),
                Err(_) => {
                    warn("LOOPX_STORE_WAIT_MS", &ms, "a number of milliseconds");
                    None
                }
            }),
            clock_skew_ms: text("LOOPX_CLOCK_SKEW_MS").map_or(0, |ms| match ms.trim().parse() {
                Ok(ms) => ms,
                Err(_) => {
                    warn("LOOPX_CLOCK_SKEW_MS", &ms, "a number of milliseconds");
                    0
                }
            }),
            lease_max: duration(
                "LOOPX_LEASE_MAX",
                Duration::from_secs(1),
                "a duration of a second or more (like 2m)",
            ),
            host_name: text("LOOPX_HOST_ID").map(|id| id.trim().to_owned()),
            git_timeout: duration("LOOPX_GIT_TIMEOUT", Duration::ZERO, "a duration (like 20s)"),
            state_dir: state_dir(text("XDG_STATE_HOME"), text("HOME")),
        }
    }

    /// Puts each setting in the command's context, before anything uses it: from there they
    /// travel with every project it opens (`Ctx::project`: the store's settings and git's
    /// timeout) and with the supervisor's `World` (`Ctx::world`).
    pub fn install(self, ctx: &mut crate::context::Ctx) {
        ctx.lease_max = self.lease_max;
        // The person's state directory keeps their list of projects and their account book
        // (each account's quota ledger, shared by their projects: `docs/quota.md`).
        let account_book = self
            .state_dir
            .as_ref()
            .map(|dir| dir.join(loopx_app::accounts::ACCOUNT_BOOK_FILE));
        ctx.registry = self.state_dir.map(loopx_app::projects::Registry::in_dir);
        ctx.store = loopx_kernel::StoreSettings {
            url: self.store_url,
            wait: self.store_wait.unwrap_or(loopx_kernel::store::DEFAULT_WAIT),
            clock: loopx_kernel::WallClock::skewed(self.clock_skew_ms),
            pools: Default::default(),
            local_only: false,
            account_book,
        };
        ctx.host = loopx_domain::process::Host::named(self.host_name.as_deref());
        ctx.git_timeout = self.git_timeout;
    }
}

/// Where the person's state lives: `$XDG_STATE_HOME/loopx`, else `$HOME/.local/state/loopx`
/// (the XDG base directory rule: a relative `XDG_STATE_HOME` is ignored).
fn state_dir(xdg: Option<String>, home: Option<String>) -> Option<std::path::PathBuf> {
    let xdg = xdg
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute());
    let home = home
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|h| h.join(".local/state"));
    xdg.or(home).map(|dir| dir.join("loopx"))
}
