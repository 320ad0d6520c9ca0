//! What every command needs: where the project is, who is acting, and where output goes.

use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use loopx_kernel::{Project, Timestamp};

use crate::args::{Cli, ColorChoice};
use crate::errors::ExpectedError;
use crate::output::Style;

/// Per-invocation context.
pub struct Ctx {
    project_dir: Option<PathBuf>,
    pub json: bool,
    pub style: Style,
    pub out: BufWriter<Box<dyn Write + Send>>,
    /// The process's log.
    pub logging: Option<crate::logging::Logging>,
    /// `LOOPX_LEASE_MAX`: the supervisor's longest claim before a renewal.
    pub lease_max: Option<std::time::Duration>,
    /// `LOOPX_STORE_URL`, `LOOPX_STORE_WAIT_MS` and `LOOPX_CLOCK_SKEW_MS`: how the project's
    /// store is reached and this host's clock; every project this process opens carries them.
    pub store: loopx_kernel::StoreSettings,
    /// `LOOPX_HOST_ID`: the host the supervisor records its processes on.
    pub host: loopx_domain::process::Host,
    /// The person's registry of projects (`XDG_STATE_HOME`, `HOME`), if there is a place for it.
    pub registry: Option<loopx_app::projects::Registry>,
    /// `LOOPX_GIT_TIMEOUT`: how long one git command may take; every project this process
    /// opens carries it (`None`: the git layer's default).
    pub git_timeout: Option<std::time::Duration>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("project_dir", &self.project_dir)
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

impl Ctx {
    /// The supervisor's world: this process, the machine's clock, and the settings the
    /// environment gave.
    pub fn world(&self) -> loopx_supervisor::World {
        let world = loopx_supervisor::World::real(self.host.clone(), self.store.clock.clone());
        match self.lease_max {
            Some(max) => world.with_lease_max(max),
            None => world,
        }
    }

    pub fn new(cli: &Cli) -> Ctx {
        let colour = match cli.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        };
        Ctx {
            project_dir: cli.project.clone(),
            json: cli.json,
            style: Style {
                enabled: colour && !cli.json,
            },
            out: BufWriter::new(Box::new(std::io::stdout())),
            logging: None,
            lease_max: None,
            store: loopx_kernel::StoreSettings::default(),
            host: loopx_domain::process::Host::default(),
            registry: None,
            git_timeout: None,
        }
    }

    /// Points this context at the project in `dir` (`loopx demo` creates its own).
    pub fn set_project_dir(&mut self, dir: PathBuf) {
        self.project_dir = Some(dir);
    }

    /// The directory `init` creates the project in.
    pub fn init_dir(&self) -> Result<PathBuf, ExpectedError> {
        match &self.project_dir {
            Some(dir) => Ok(dir.clone()),
            None => std::env::current_dir().map_err(|e| {
                ExpectedError::Usage(format!("cannot read the current directory: {e}"))
            }),
        }
    }

    /// The project: `--project DIR` (or `LOOPX_PROJECT`), else found by walking up.
    pub fn project(&self) -> Result<Project, ExpectedError> {
        let project = match &self.project_dir {
            Some(dir) => Project::at(dir),
            None => Project::discover(&self.init_dir()?),
        };
        let project = project
            .map_err(loopx_kernel::KernelError::from)?
            .with_store(self.store.clone())
            .with_git_timeout(self.git_timeout);
        tracing::debug!(root = %project.root().display(), "project");
        Ok(project)
    }

    /// The application layer for this project and caller: who acts (`actor`), from which
    /// slice and todo (`LOOPX_SLICE`, `LOOPX_TODO`), and the loopx executable for land checks,
    /// read here, at the edge.
    pub fn app(&self) -> Result<loopx_app::App, ExpectedError> {
        let caller = loopx_app::Caller {
            actor: self.actor(),
            slice: slice_id(),
            slice_todo: std::env::var("LOOPX_TODO")
                .ok()
                .and_then(|t| t.parse().ok()),
        };
        Ok(loopx_app::App::new(
            self.project()?,
            caller,
            std::env::current_exe().ok(),
        ))
    }

    /// Who is acting: `agent:<name>` inside a slice, else `human:<user>`.
    pub fn actor(&self) -> String {
        if let (Some(_), Ok(agent)) = (slice_id(), std::env::var("LOOPX_AGENT")) {
            return loopx_vocab::actor::agent(&agent);
        }
        let uid = nix::unistd::getuid();
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .ok()
            .filter(|u| !u.is_empty())
            .or_else(|| {
                nix::unistd::User::from_uid(uid)
                    .ok()
                    .flatten()
                    .map(|u| u.name)
            })
            .unwrap_or_else(|| format!("uid{uid}"));
        loopx_vocab::actor::person(&user)
    }

    /// The current wall-clock time, as the project's store settings read it.
    pub fn now(&self) -> Timestamp {
        self.store.clock.now()
    }

    /// Writes one line of human output, control characters made visible (agents write much of
    /// what people read: `output::safe_line`).
    pub fn line(&mut self, text: impl AsRef<str>) -> Result<(), ExpectedError> {
        let safe = crate::output::safe_line(text.as_ref(), self.style.enabled);
        writeln!(self.out, "{safe}")?;
        Ok(())
    }

    /// Writes a warning: a line of the human output, or on stderr beside `--json`, whose
    /// stdout stays one document.
    pub fn warn(&mut self, text: impl AsRef<str>) -> Result<(), ExpectedError> {
        if !self.json {
            return self.line(text);
        }
        let safe = crate::output::safe_line(text.as_ref(), false);
        writeln!(std::io::stderr(), "{safe}")?;
        Ok(())
    }

    /// Writes one JSON document (an object carrying `format_version`).
    pub fn json_out(&mut self, value: &impl serde::Serialize) -> Result<(), ExpectedError> {
        serde_json::to_writer(&mut self.out, value).map_err(std::io::Error::from)?;
        writeln!(self.out)?;
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), ExpectedError> {
        self.out.flush()?;
        Ok(())
    }
}

/// The slice this process runs in, if any (`LOOPX_SLICE`).
pub fn slice_id() -> Option<String> {
    std::env::var("LOOPX_SLICE").ok().filter(|s| !s.is_empty())
}
