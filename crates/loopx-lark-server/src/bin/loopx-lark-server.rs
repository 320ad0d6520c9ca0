//! `loopx-lark-server [--port N] [--app-id ID] [--app-secret SECRET] [--app-token TOKEN]
//! [--chat ID]`: the scripted Lark Open API from a shell, so a person can try loopx's Lark board
//! with no Lark account (`docs/try-offline.md`). It prints where it listens and the
//! `.loopx/loopx.toml` lines and secret that reach it, then serves until killed. Flags are
//! parsed by hand, as `loopx-model-server`'s are: a test helper needs no CLI framework.

use std::io::Write;
use std::process::ExitCode;

use loopx_lark_server::{LarkServer, STATE_PATH};

const USAGE: &str = "usage: loopx-lark-server [--port N] [--app-id ID] [--app-secret SECRET] [--app-token TOKEN] [--chat ID]

A scripted Lark (Feishu) Open API on 127.0.0.1, with one Base held in memory, for trying
loopx's Lark board (`loopx lark sync`, `loopx run`) with no Lark account and no network. It
prints the lines to put in .loopx/loopx.toml and the secret for loopx's environment, then serves
until killed. Everything it holds is lost when it stops. A walk-through: docs/try-offline.md.

  --port N              port on 127.0.0.1 (default 8791; 0: any free port)
  --app-id ID           the app id it accepts (default cli_offline)
  --app-secret SECRET   the app secret it accepts (default offline-secret)
  --app-token TOKEN     the Base's token (default bascnOffline)
  --chat ID             a chat the app's bot is in, for questions (default oc_offline)

GET /scripted/state shows the tables, records and cards it holds.";

/// The command line, with the defaults a person can use as printed.
#[derive(Debug)]
struct Args {
    port: u16,
    app_id: String,
    secret: String,
    app_token: String,
    chat: String,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse(&args) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let server = match LarkServer::start_on(args.port, &args.app_id, &args.secret, &args.app_token)
    {
        Ok(server) => server,
        Err(e) => {
            eprintln!(
                "error: cannot listen on 127.0.0.1:{}: {e}\n(hint: `--port N` for another port, `--port 0` for any free one)",
                args.port
            );
            return ExitCode::from(1);
        }
    };
    server
        .state()
        .chats
        .insert(args.chat.clone(), "loopx (offline)".to_owned());
    // Flushed at once: a shell that started it in the background reads this from a file.
    let mut out = std::io::stdout();
    let _ = out.write_all(announcement(&server.url(), &args).as_bytes());
    let _ = out.flush();
    loop {
        std::thread::park();
    }
}

/// What to configure, as the person will paste it.
fn announcement(url: &str, args: &Args) -> String {
    format!(
        "loopx-lark-server: a scripted Lark Open API listening on {url} (in memory; stop it to forget everything)

In .loopx/loopx.toml:

[lark]
base_url = \"{url}\"
app_id = \"{app_id}\"
[lark.board]
app_token = \"{app_token}\"

In loopx's environment:

export LOOPX_LARK_APP_SECRET={secret}

For questions, chat_id = \"{chat}\" in [lark.questions]. What it holds: curl -s {url}{STATE_PATH}
",
        app_id = args.app_id,
        app_token = args.app_token,
        secret = args.secret,
        chat = args.chat,
    )
}

fn parse(list: &[String]) -> Result<Args, String> {
    let mut args = Args {
        port: 8791,
        app_id: "cli_offline".to_owned(),
        secret: "offline-secret".to_owned(),
        app_token: "bascnOffline".to_owned(),
        chat: "oc_offline".to_owned(),
    };
    let mut list = list.iter();
    while let Some(flag) = list.next() {
        let value = list
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?
            .clone();
        match flag.as_str() {
            "--port" => {
                args.port = value
                    .parse()
                    .map_err(|_| format!("`--port {value}` is not a port number (0 to 65535)"))?;
            }
            "--app-id" => args.app_id = value,
            "--app-secret" => args.secret = value,
            "--app-token" => args.app_token = value,
            "--chat" => args.chat = value,
            _ => return Err(format!("unknown flag `{flag}`")),
        }
    }
    Ok(args)
}
