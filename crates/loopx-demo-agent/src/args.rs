//! The demo agent's command line, shaped like the flags `adapters/demo.toml` renders.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

/// The simulated agent behind `loopx demo`: prints a Claude-style stream-json run.
#[derive(Debug, Parser)]
#[command(name = "loopx-demo-agent", version, disable_help_subcommand = true)]
pub(crate) struct DemoArgs {
    /// Never write files: a work slice reports that it is blocked instead.
    #[arg(long, conflicts_with = "workspace_write")]
    pub read_only: bool,
    /// May write files under the working directory (the default).
    #[arg(long)]
    pub workspace_write: bool,
    /// Stop with `error_max_turns` when the work needs more turns than this.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Read the prompt from this file; without it, the prompt is read from stdin.
    #[arg(long, value_name = "PATH")]
    pub prompt_file: Option<PathBuf>,
}

impl DemoArgs {
    /// Parses the arguments after `__demo-agent`.
    pub fn parse_from_rest(rest: impl IntoIterator<Item = OsString>) -> Result<Self, clap::Error> {
        Self::try_parse_from(std::iter::once(OsString::from("loopx-demo-agent")).chain(rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<DemoArgs, clap::Error> {
        DemoArgs::parse_from_rest(args.iter().map(OsString::from))
    }

    #[test]
    fn reads_the_adapter_flags() {
        let args = parse(&["--read-only", "--max-turns", "3", "--prompt-file", "p.md"])
            .expect("valid flags");
        assert!(args.read_only);
        assert_eq!(args.max_turns, Some(3));
        assert_eq!(args.prompt_file, Some(PathBuf::from("p.md")));
    }

    #[test]
    fn refuses_contradictions_and_zero_turns() {
        assert!(parse(&["--read-only", "--workspace-write"]).is_err());
        assert!(parse(&["--max-turns", "0"]).is_err());
    }
}
