//! The `loopx-model-server` command: start a server for a script file, announce the port, and
//! serve until killed; or, as `loopx-model-server conform`, run the adapter conformance kit
//! ([`crate::conform`]). Hand-parsed flags keep this dev helper free of a CLI framework.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::conform::{Api, Kit};
use crate::{ModelServer, Script};

const USAGE: &str =
    "usage: loopx-model-server --script FILE [--port N] [--port-file PATH] [--requests-log PATH]

A scripted model on 127.0.0.1, so the real agent CLIs run with no account and no network: each
model request gets the script's next turn, in the API it asked in (Anthropic Messages at
/v1/messages for Claude Code, OpenAI Responses at /v1/responses for Codex, Chat Completions at
/v1/chat/completions). A walk-through with Claude Code and Codex: docs/try-offline.md.

  --script FILE         the turns, as JSON, for example:
                          {\"turns\": [
                             {\"reply\": {\"tool_calls\": [{\"name\": \"Write\",
                               \"input\": {\"file_path\": \"hello.txt\", \"content\": \"hi\\n\"}}]}},
                             {\"reply\": {\"text\": \"Done.\", \"usage\": {\"input_tokens\": 900, \"output_tokens\": 12}}},
                             {\"error\": {\"status\": 429, \"headers\": {\"retry-after\": \"3600\"}, \"body\": {}}}],
                           \"when_done\": \"repeat_last\"}
                        a turn is a reply (text, tool calls, usage) or an error answered as
                        given; after the last turn, \"repeat_last\" (default) plays it again and
                        \"fail\" answers 500
  --port N              port on 127.0.0.1 to listen on (default 0: any free port)
  --port-file PATH      write the chosen port here once listening (atomically, via rename)
  --requests-log PATH   append every request as one JSON line (credentials redacted)

usage: loopx-model-server conform --profile FILE --api anthropic|responses|chat [--loopx PATH]
           [--env NAME=VALUE]... [--home DIR] [--case report|quota|auth]... [--timeout SECS] [--json]

  Runs the profile through `loopx run --once` against each standard script (a report, a 429
  out of quota, a 401) and prints what loopx classified; exit 1 if any case differs.
  `{url}` in the profile, in --env values and in the --home template's files is the server.";

const CONFORM_TIMEOUT_SECS: u64 = 300;

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
    let args: Vec<OsString> = args.into_iter().collect();
    // Asked for, the usage is the answer: on stdout, exit 0 (it printed "error: help requested").
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|a| a == "conform") {
        args.next();
        return conform(args);
    }
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

fn conform(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let (kit, as_json) = match parse_conform(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("error: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match crate::conform::run(&kit) {
        Ok(verdicts) => {
            if as_json {
                println!("{}", crate::conform::json(&verdicts));
            } else {
                print!("{}", crate::conform::table(&verdicts));
            }
            match verdicts.iter().all(|v| v.passed) {
                true => ExitCode::SUCCESS,
                false => ExitCode::from(1),
            }
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn parse_conform(args: impl IntoIterator<Item = OsString>) -> Result<(Kit, bool), String> {
    let mut kit = Kit {
        timeout: std::time::Duration::from_secs(CONFORM_TIMEOUT_SECS),
        ..Kit::default()
    };
    let mut as_json = false;
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let flag = flag.to_string_lossy().into_owned();
        if flag == "--json" {
            as_json = true;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Err("help requested".to_owned());
        }
        let value = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
        let text = value.to_string_lossy().into_owned();
        match flag.as_str() {
            "--profile" => kit.profile = PathBuf::from(value),
            "--api" => {
                kit.api = Some(Api::parse(&text).ok_or_else(|| {
                    format!("`--api {text}` is not one of anthropic, responses, chat")
                })?);
            }
            "--loopx" => kit.loopx = Some(PathBuf::from(value)),
            "--home" => kit.home = Some(PathBuf::from(value)),
            "--case" => kit.only.push(text),
            "--env" => {
                let (name, value) = text
                    .split_once('=')
                    .ok_or_else(|| format!("`--env {text}` is not NAME=VALUE"))?;
                kit.env.push((name.to_owned(), value.to_owned()));
            }
            "--timeout" => {
                let secs: u64 = text
                    .parse()
                    .map_err(|_| format!("`--timeout {text}` is not a number of seconds"))?;
                kit.timeout = std::time::Duration::from_secs(secs);
            }
            _ => return Err(format!("unknown flag `{flag}`")),
        }
    }
    if kit.profile.as_os_str().is_empty() {
        return Err("`--profile FILE` is required".to_owned());
    }
    if kit.api.is_none() {
        return Err("`--api anthropic|responses|chat` is required".to_owned());
    }
    Ok((kit, as_json))
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
    fn help_is_the_usage_and_not_an_error() {
        for flag in ["--help", "-h"] {
            assert_eq!(main([OsString::from(flag)]), ExitCode::SUCCESS);
            let conform = [OsString::from("conform"), OsString::from(flag)];
            assert_eq!(main(conform), ExitCode::SUCCESS);
        }
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
    fn conform_command_lines_parse_or_say_what_is_wrong() {
        let parse = |list: &[&str]| parse_conform(list.iter().map(OsString::from));
        let (kit, as_json) = parse(&[
            "--profile",
            "p.toml",
            "--api",
            "chat",
            "--env",
            "A=b={url}",
            "--case",
            "quota",
            "--json",
        ])
        .expect("valid");
        assert!(as_json);
        assert_eq!(kit.api, Some(Api::Chat));
        assert_eq!(kit.env, [("A".to_owned(), "b={url}".to_owned())]);
        assert_eq!(kit.only, ["quota"]);
        for (list, want) in [
            (&["--api", "chat"][..], "--profile FILE` is required"),
            (
                &["--profile", "p"],
                "--api anthropic|responses|chat` is required",
            ),
            (&["--profile", "p", "--api", "grpc"], "not one of"),
            (
                &["--profile", "p", "--api", "chat", "--env", "A"],
                "not NAME=VALUE",
            ),
        ] {
            let error = parse(list).expect_err("wrong");
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
