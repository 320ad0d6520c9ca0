//! The `loopx-model-server` command: start a server for a script file, announce the port, and
//! serve until killed. Hand-parsed flags keep this dev helper free of a CLI framework.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::{ModelServer, Script};

const USAGE: &str =
    "usage: loopx-model-server --script FILE [--port N] [--port-file PATH] [--requests-log PATH]

  --script FILE         JSON script of turns (see the crate docs)
  --port N              port on 127.0.0.1 to listen on (default 0: any free port)
  --port-file PATH      write the chosen port here once listening (atomically, via rename)
  --requests-log PATH   append every request as one JSON line (credentials redacted)";

/// Parsed command line.
#[derive(Debug, Default, PartialEq)]
struct Args {
    script: PathBuf,
    port: u16,
    port_file: Option<PathBuf>,
    requests_log: Option<PathBuf>,
}

/// Runs the command; returns 2 for a usage error and 1 if the server cannot start.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args = match parse(args) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("error: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

fn serve(args: &Args) -> Result<(), String> {
    let script = Script::load(&args.script).map_err(|e| chain(&e))?;
    let server = ModelServer::start_with(script, args.port, args.requests_log.as_deref())
        .map_err(|e| chain(&e))?;
    if let Some(path) = &args.port_file {
        write_port_file(path, server.port())
            .map_err(|e| format!("failed to write port file `{}`: {e}", path.display()))?;
    }
    eprintln!("loopx-model-server: listening on {}", server.url());
    server.wait();
    Ok(())
}

/// Writes then renames, so a shell polling for the file never reads a partial number.
fn write_port_file(path: &Path, port: u16) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, format!("{port}\n"))?;
    std::fs::rename(&tmp, path)
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    out
}

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Args, String> {
    let mut out = Args::default();
    let mut script = None;
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let flag = flag.to_string_lossy().into_owned();
        if flag == "-h" || flag == "--help" {
            return Err("help requested".to_owned());
        }
        let value = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--script" => script = Some(PathBuf::from(value)),
            "--port" => {
                let text = value.to_string_lossy();
                out.port = text
                    .parse()
                    .map_err(|_| format!("`--port {text}` is not a port number"))?;
            }
            "--port-file" => out.port_file = Some(PathBuf::from(value)),
            "--requests-log" => out.requests_log = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown flag `{flag}`")),
        }
    }
    out.script = script.ok_or("`--script FILE` is required")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse(list.iter().map(OsString::from))
    }

    #[test]
    fn parses_every_flag() {
        let parsed = args(&[
            "--script",
            "s.json",
            "--port",
            "8080",
            "--port-file",
            "p",
            "--requests-log",
            "l",
        ])
        .expect("all flags are valid");
        assert_eq!(
            parsed,
            Args {
                script: "s.json".into(),
                port: 8080,
                port_file: Some("p".into()),
                requests_log: Some("l".into()),
            }
        );
    }

    #[test]
    fn bad_command_lines_are_usage_errors() {
        for (list, want) in [
            (&[][..], "--script FILE` is required"),
            (&["--script"], "needs a value"),
            (&["--script", "s", "--port", "99999"], "not a port number"),
            (&["--bogus", "x"], "unknown flag `--bogus`"),
        ] {
            let error = args(list).expect_err("the command line is wrong");
            assert!(error.contains(want), "{list:?}: {error}");
        }
    }

    #[test]
    fn port_file_is_written_whole() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("port");
        write_port_file(&path, 4242).expect("the temp dir is writable");
        let text = std::fs::read_to_string(&path).expect("the port file exists");
        assert_eq!(text, "4242\n");
    }
}
