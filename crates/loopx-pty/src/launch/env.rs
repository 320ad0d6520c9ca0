//! The agent's environment: an allowlist of inherited names plus explicit variables, and the
//! slice marker that finds escaped processes later.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use crate::errors::SpawnError;
use crate::spec::LaunchSpec;

/// The variable carrying the slice id; the sweep looks for `LOOPX_SLICE=<id>` in
/// `/proc/<pid>/environ` to find processes that left the slice's session.
pub const SLICE_MARKER_VAR: &str = "LOOPX_SLICE";
/// The variable naming the prompt file, when the spec has one.
pub const PROMPT_FILE_VAR: &str = "LOOPX_PROMPT_FILE";
const DEFAULT_TERM: &str = "xterm-256color";

/// Builds the environment from `inherit` (read from `source`), then `set`, then loopx's own.
pub(crate) fn build_env(
    spec: &LaunchSpec,
    source: impl Fn(&str) -> Option<OsString>,
) -> Result<BTreeMap<OsString, OsString>, SpawnError> {
    let mut env = BTreeMap::new();
    for name in &spec.env.inherit {
        if let Some(value) = source(name) {
            env.insert(OsString::from(name), value);
        }
    }
    for (name, value) in &spec.env.set {
        env.insert(OsString::from(name), value.clone());
    }
    env.entry(OsString::from("TERM"))
        .or_insert_with(|| OsString::from(DEFAULT_TERM));
    if let Some(prompt) = &spec.prompt {
        env.insert(
            OsString::from(PROMPT_FILE_VAR),
            prompt.path.clone().into_os_string(),
        );
    }
    env.insert(
        OsString::from(SLICE_MARKER_VAR),
        OsString::from(spec.slice_id.as_str()),
    );
    for (name, value) in &env {
        check_var(name, value)?;
    }
    Ok(env)
}

fn check_var(name: &OsStr, value: &OsStr) -> Result<(), SpawnError> {
    let name_bytes = name.as_bytes();
    if name_bytes.is_empty()
        || name_bytes.contains(&b'=')
        || name_bytes.contains(&0)
        || value.as_bytes().contains(&0)
    {
        return Err(SpawnError::BadEnv {
            name: name.to_string_lossy().into_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{PromptFile, SliceId};

    fn spec() -> LaunchSpec {
        LaunchSpec::new(
            SliceId::new("s-1").expect("valid id"),
            "/bin/true",
            "/",
            "/tmp/x.log",
        )
    }

    fn fake_source(name: &str) -> Option<OsString> {
        match name {
            "PATH" => Some("/usr/bin".into()),
            "API_TOKEN" => Some("secret".into()),
            _ => None,
        }
    }

    #[test]
    fn inherits_only_what_is_listed() {
        let mut spec = spec();
        spec.env.inherit = vec!["PATH".into(), "MISSING".into()];
        let env = build_env(&spec, fake_source).expect("valid env");
        let names: Vec<_> = env
            .keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["LOOPX_SLICE", "PATH", "TERM"]);
        assert_eq!(env[OsStr::new("TERM")], "xterm-256color");
        assert_eq!(env[OsStr::new("LOOPX_SLICE")], "s-1");
    }

    #[test]
    fn explicit_values_win_but_the_marker_cannot_be_overridden() {
        let mut spec = spec();
        spec.env.inherit = vec!["PATH".into()];
        spec.env.set = vec![
            ("PATH".into(), "/opt/bin".into()),
            ("TERM".into(), "dumb".into()),
            ("LOOPX_SLICE".into(), "other".into()),
        ];
        spec.prompt = Some(PromptFile {
            path: "/tmp/p.md".into(),
            contents: Vec::new(),
        });
        let env = build_env(&spec, fake_source).expect("valid env");
        assert_eq!(env[OsStr::new("PATH")], "/opt/bin");
        assert_eq!(env[OsStr::new("TERM")], "dumb");
        assert_eq!(env[OsStr::new("LOOPX_SLICE")], "s-1");
        assert_eq!(env[OsStr::new("LOOPX_PROMPT_FILE")], "/tmp/p.md");
    }

    #[test]
    fn rejects_names_execve_cannot_carry() {
        for name in ["", "A=B", "A\0"] {
            let mut spec = spec();
            spec.env.set = vec![(name.into(), "v".into())];
            assert!(matches!(
                build_env(&spec, fake_source),
                Err(SpawnError::BadEnv { .. })
            ));
        }
        let mut spec = spec();
        spec.env.set = vec![("OK".into(), "a\0b".into())];
        let err = build_env(&spec, fake_source).expect_err("NUL in value");
        assert!(err.to_string().contains("`OK`"), "{err}");
    }
}
