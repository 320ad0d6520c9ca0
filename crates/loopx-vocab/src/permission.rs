//! How much an agent may change.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::kinds::{Spelled, UnknownWord};

/// How much an agent may do. Ordered: `ReadOnly < WorkspaceWrite < Full`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionLevel {
    /// Read files and run read-only commands; never write.
    ReadOnly,
    /// Write inside the working directory, with the vendor's sandbox on.
    WorkspaceWrite,
    /// The vendor's bypass mode. Runs only after a human approved the profile's content hash.
    Full,
}

impl PermissionLevel {
    /// Every level, lowest first.
    pub const ALL: [Self; 3] = [Self::ReadOnly, Self::WorkspaceWrite, Self::Full];

    /// The spelling used in TOML and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Full => "full",
        }
    }
}

impl Spelled for PermissionLevel {
    const MEMBERS: &'static [Self] = &Self::ALL;
    fn spelling(self) -> &'static str {
        self.as_str()
    }
}

impl fmt::Display for PermissionLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionLevel {
    type Err = UnknownWord;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|level| level.as_str() == s)
            .ok_or_else(|| UnknownWord {
                what: "permission level",
                value: s.to_owned(),
                expected: "`read-only`, `workspace-write`, `full`".into(),
            })
    }
}
