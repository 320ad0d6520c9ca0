//! Kernel resource limits for an agent, and their `--limit NAME=VALUE` form on the helper's
//! command line.
//!
//! portable-pty has no `pre_exec` hook, so limits cannot be set between fork and exec of the
//! agent. Instead the slice runs a tiny helper (`loopx __exec`, see
//! [`exec_with_limits`](crate::exec_with_limits)) that calls `setrlimit` on itself and then
//! `execv`s the agent; limits survive `exec` and are inherited by every child.

use std::ffi::OsString;

use nix::sys::resource::Resource;

use crate::errors::ExecError;

/// Resource limits applied to the agent and everything it starts. `None` leaves a limit as
/// inherited. Soft and hard limits are both set, so the agent cannot raise them again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceLimits {
    /// `RLIMIT_CPU`, seconds of CPU time per process.
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_DATA`, bytes of data segment. Not `RLIMIT_AS`, which breaks Node-based agents
    /// (WebAssembly reserves ~10 GiB of address space up front).
    pub data_bytes: Option<u64>,
    /// `RLIMIT_NOFILE`, open file descriptors.
    pub open_files: Option<u64>,
    /// `RLIMIT_FSIZE`, largest file the agent may write, in bytes.
    pub file_size_bytes: Option<u64>,
}

/// One limit: its name on the command line and its kernel resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LimitKind {
    pub(crate) name: &'static str,
    pub(crate) resource: Resource,
}

pub(crate) const CPU: LimitKind = LimitKind {
    name: "cpu",
    resource: Resource::RLIMIT_CPU,
};
pub(crate) const DATA: LimitKind = LimitKind {
    name: "data",
    resource: Resource::RLIMIT_DATA,
};
pub(crate) const NOFILE: LimitKind = LimitKind {
    name: "nofile",
    resource: Resource::RLIMIT_NOFILE,
};
pub(crate) const FSIZE: LimitKind = LimitKind {
    name: "fsize",
    resource: Resource::RLIMIT_FSIZE,
};

impl ResourceLimits {
    /// True when no limit is set (no helper needed).
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    fn entries(&self) -> Vec<(LimitKind, u64)> {
        [
            (CPU, self.cpu_seconds),
            (DATA, self.data_bytes),
            (NOFILE, self.open_files),
            (FSIZE, self.file_size_bytes),
        ]
        .into_iter()
        .filter_map(|(kind, value)| value.map(|v| (kind, v)))
        .collect()
    }

    /// The helper arguments for these limits: `--limit cpu=60 --limit nofile=256 ...`.
    ///
    /// ```
    /// let limits = loopx_pty::ResourceLimits { cpu_seconds: Some(60), ..Default::default() };
    /// assert_eq!(limits.to_args(), ["--limit", "cpu=60"]);
    /// ```
    pub fn to_args(&self) -> Vec<OsString> {
        self.entries()
            .into_iter()
            .flat_map(|(kind, value)| ["--limit".into(), format!("{}={value}", kind.name).into()])
            .collect()
    }
}

/// Parses one `NAME=VALUE` limit.
pub(crate) fn parse_limit(given: &str) -> Result<(LimitKind, u64), ExecError> {
    let bad = || ExecError::BadLimit {
        given: given.to_owned(),
    };
    let (name, value) = given.split_once('=').ok_or_else(bad)?;
    let kind = [CPU, DATA, NOFILE, FSIZE]
        .into_iter()
        .find(|kind| kind.name == name)
        .ok_or_else(bad)?;
    let value = value.parse::<u64>().map_err(|_| bad())?;
    Ok((kind, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip_through_the_parser() {
        let limits = ResourceLimits {
            cpu_seconds: Some(7),
            data_bytes: Some(1 << 30),
            open_files: Some(64),
            file_size_bytes: Some(0),
        };
        let args = limits.to_args();
        let parsed: Vec<_> = args
            .chunks(2)
            .map(|pair| {
                assert_eq!(pair[0], "--limit");
                parse_limit(pair[1].to_str().expect("ascii")).expect("valid limit")
            })
            .map(|(kind, value)| (kind.name, value))
            .collect();
        assert_eq!(
            parsed,
            [("cpu", 7), ("data", 1 << 30), ("nofile", 64), ("fsize", 0)]
        );
    }

    #[test]
    fn rejects_unknown_names_and_bad_values() {
        for given in [
            "as=1",
            "cpu",
            "cpu=",
            "cpu=-1",
            "cpu=1.5",
            "=3",
            "nofile=1e3",
        ] {
            let err = parse_limit(given).expect_err(given);
            assert!(err.to_string().contains(given), "{err}");
        }
    }

    #[test]
    fn empty_limits_need_no_helper() {
        assert!(ResourceLimits::default().is_empty());
        assert!(ResourceLimits::default().to_args().is_empty());
    }
}
