//! `[lark]`: the Lark (Feishu) board and questions (`docs/lark.md`). The file names the app,
//! the Base and the chat; the secrets (`LOOPX_LARK_APP_SECRET`, the verification token and the
//! encrypt key) come only from the environment, and a file that holds one is refused: it may
//! be committed or shared.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

use crate::adapter::duration;
use crate::config::{Checked, DurationText, Problems, take};

/// Where Lark's Open API is when `base_url` is not set (Feishu; Lark is
/// `https://open.larksuite.com`).
pub const DEFAULT_LARK_BASE_URL: &str = "https://open.feishu.cn";
/// How often the table is read for changes made in Lark, unless `[lark.board] poll` says.
const DEFAULT_POLL: Duration = Duration::from_secs(10);
/// Where card callbacks are heard, unless `[lark.questions] listen` says.
const DEFAULT_LISTEN: &str = "127.0.0.1:8790";
/// Keys that would put a secret in the file, and the variable that holds it instead.
const SECRETS: [(&str, &str); 4] = [
    ("app_secret", "LOOPX_LARK_APP_SECRET"),
    ("secret", "LOOPX_LARK_APP_SECRET"),
    ("verification_token", "LOOPX_LARK_VERIFICATION_TOKEN"),
    ("encrypt_key", "LOOPX_LARK_ENCRYPT_KEY"),
];

/// `[lark]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkConfig {
    /// The Open API's origin, without `/open-apis`.
    pub base_url: String,
    /// The app's id (`cli_…`); its secret is `LOOPX_LARK_APP_SECRET`.
    pub app_id: String,
    pub board: Option<LarkBoard>,
    pub questions: Option<LarkQuestions>,
}

/// `[lark.board]`: the Base table the todos are projected onto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkBoard {
    /// The Base (bitable app) token.
    pub app_token: String,
    /// The table; `None`: loopx creates one named `loopx` and says its id.
    pub table_id: Option<String>,
    /// How often the table is read for changes made in Lark.
    pub poll: Duration,
}

/// `[lark.questions]`: where questions are posted and who may answer them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkQuestions {
    pub chat_id: String,
    /// The open_ids allowed to answer (and to change the board); never empty.
    pub answerers: Vec<String>,
    /// Where card callbacks are heard.
    pub listen: SocketAddr,
    /// Whether approvals (a `full` profile, the notification command, a project adapter) may
    /// be answered from Lark; by default only at the terminal.
    pub approvals: bool,
}

#[derive(Debug, Deserialize)]
pub(super) struct RawLark {
    base_url: Option<Checked<String>>,
    app_id: Option<Checked<String>>,
    board: Option<RawBoard>,
    questions: Option<RawQuestions>,
    // Secrets, refused by name: they belong in the environment.
    app_secret: Option<toml::Value>,
    secret: Option<toml::Value>,
    verification_token: Option<toml::Value>,
    encrypt_key: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
pub(super) struct RawBoard {
    app_token: Option<Checked<String>>,
    table_id: Option<Checked<String>>,
    poll: Option<Checked<DurationText>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct RawQuestions {
    chat_id: Option<Checked<String>>,
    answerers: Option<Checked<Vec<String>>>,
    listen: Option<Checked<String>>,
    approvals: Option<Checked<bool>>,
}

/// The keys `[lark]` and its tables know (for "did you mean").
pub(super) fn known_keys(path: &[&str]) -> &'static [&'static str] {
    match path {
        [] => &[
            "base_url",
            "app_id",
            "board",
            "questions",
            "app_secret",
            "secret",
            "verification_token",
            "encrypt_key",
        ],
        ["board"] => &["app_token", "table_id", "poll"],
        ["questions"] => &["chat_id", "answerers", "listen", "approvals"],
        _ => &[],
    }
}

pub(super) fn lark(raw: RawLark, p: &mut Problems) -> Option<LarkConfig> {
    for (key, value) in [
        ("app_secret", raw.app_secret.is_some()),
        ("secret", raw.secret.is_some()),
        ("verification_token", raw.verification_token.is_some()),
        ("encrypt_key", raw.encrypt_key.is_some()),
    ] {
        if value {
            let var = SECRETS.iter().find(|(k, _)| *k == key).map_or("", |s| s.1);
            p.push(
                0..0,
                Some(&format!("lark.{key}")),
                format!("`lark.{key}` is a secret, and this file may be shared"),
                Some(format!("remove it and set {var} in loopx's environment")),
            );
        }
    }
    let base_url = match take(raw.base_url, "lark.base_url", p) {
        Some((url, span)) => {
            let url = url.trim_end_matches('/').to_owned();
            match base_url_problem(&url) {
                Some(why) => {
                    p.push(
                        span,
                        Some("lark.base_url"),
                        why,
                        Some(format!(
                            "{DEFAULT_LARK_BASE_URL}, or https://open.larksuite.com for Lark"
                        )),
                    );
                    None
                }
                None => Some(url),
            }
        }
        None => Some(DEFAULT_LARK_BASE_URL.to_owned()),
    };
    let app_id = required(
        raw.app_id,
        "lark.app_id",
        "the app's id from the developer console, `cli_…`",
        p,
    );
    let board = raw.board.and_then(|b| board(b, p));
    let questions = raw.questions.and_then(|q| questions(q, p));
    Some(LarkConfig {
        base_url: base_url?,
        app_id: app_id?,
        board,
        questions,
    })
}

/// Why `url` cannot be the Open API's origin: the app secret is sent to it, so it must be
/// HTTPS, or plain HTTP to this machine (a scripted server, a local proxy).
fn base_url_problem(url: &str) -> Option<String> {
    if url.starts_with("https://") && url.len() > "https://".len() {
        return None;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Some(format!("`{url}` is not an https:// URL"));
    };
    let host = rest.split(['/', '?']).next().unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.parse::<u16>().is_ok() => h,
        _ => host,
    };
    match matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        true => None,
        false => Some(format!(
            "`{url}` is plain HTTP to another machine: the app secret would cross the network unencrypted"
        )),
    }
}

fn required(
    field: Option<Checked<String>>,
    key: &str,
    what: &str,
    p: &mut Problems,
) -> Option<String> {
    match take(field, key, p) {
        Some((value, _)) if !value.trim().is_empty() => Some(value.trim().to_owned()),
        Some((_, span)) => {
            p.push(
                span,
                Some(key),
                format!("`{key}` is empty"),
                Some(format!("set it to {what}")),
            );
            None
        }
        None => {
            p.push(
                0..0,
                Some(key),
                format!("`{key}` is missing"),
                Some(format!("set it to {what}")),
            );
            None
        }
    }
}

fn board(raw: RawBoard, p: &mut Problems) -> Option<LarkBoard> {
    let app_token = required(
        raw.app_token,
        "lark.board.app_token",
        "the Base's token (the part of its URL after /base/)",
        p,
    );
    let table_id = take(raw.table_id, "lark.board.table_id", p)
        .map(|(t, _)| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    let poll = match take(raw.poll, "lark.board.poll", p) {
        Some((text, span)) => match duration(&text.0, span.clone(), "lark.board.poll", p) {
            Some(d) if d >= Duration::from_secs(1) => d,
            Some(_) => {
                p.push(
                    span,
                    Some("lark.board.poll"),
                    "`lark.board.poll` is under a second: Lark would throttle it",
                    Some("\"10s\" is the default".to_owned()),
                );
                DEFAULT_POLL
            }
            None => DEFAULT_POLL,
        },
        None => DEFAULT_POLL,
    };
    Some(LarkBoard {
        app_token: app_token?,
        table_id,
        poll,
    })
}

fn questions(raw: RawQuestions, p: &mut Problems) -> Option<LarkQuestions> {
    let chat_id = required(
        raw.chat_id,
        "lark.questions.chat_id",
        "the chat's id, `oc_…`",
        p,
    );
    let answerers = match take(raw.answerers, "lark.questions.answerers", p) {
        Some((list, span)) => {
            let bad: Vec<&String> = list.iter().filter(|id| !is_open_id(id)).collect();
            if list.is_empty() || !bad.is_empty() {
                let why = match bad.first() {
                    Some(id) => format!("`{id}` is not an open_id"),
                    None => "`lark.questions.answerers` is empty: nobody could answer".to_owned(),
                };
                p.push(
                    span,
                    Some("lark.questions.answerers"),
                    why,
                    Some("list the open_ids (`ou_…`) of the people who may answer".to_owned()),
                );
                None
            } else {
                Some(list)
            }
        }
        None => {
            p.push(
                0..0,
                Some("lark.questions.answerers"),
                "`[lark.questions]` needs `answerers`: without them anyone in the chat could decide",
                Some("answerers = [\"ou_…\"], the open_ids of the people who may answer".to_owned()),
            );
            None
        }
    };
    let listen = match take(raw.listen, "lark.questions.listen", p) {
        Some((text, span)) => match text.parse::<SocketAddr>() {
            Ok(addr) => Some(addr),
            Err(_) => {
                p.push(
                    span,
                    Some("lark.questions.listen"),
                    format!("`{text}` is not an address and port"),
                    Some(format!("for example \"{DEFAULT_LISTEN}\"")),
                );
                None
            }
        },
        None => DEFAULT_LISTEN.parse().ok(),
    };
    let approvals = take(raw.approvals, "lark.questions.approvals", p).is_some_and(|(a, _)| a);
    Some(LarkQuestions {
        chat_id: chat_id?,
        answerers: answerers?,
        listen: listen?,
        approvals,
    })
}

/// Whether `id` looks like a Lark open_id (`ou_` and letters and digits).
fn is_open_id(id: &str) -> bool {
    id.strip_prefix("ou_")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use crate::project::project_config_str;

    fn load(text: &str) -> Result<super::LarkConfig, String> {
        project_config_str("loopx.toml", text)
            .map_err(|e| match e {
                crate::LoadError::Invalid(invalid) => invalid.one_line_each(),
                other => other.to_string(),
            })
            .map(|c| c.lark.expect("a [lark] section"))
    }

    #[test]
    fn a_full_section_reads_with_its_defaults() {
        let lark = load(
            "[lark]\napp_id = \"cli_a1\"\n[lark.board]\napp_token = \"bascn1\"\n[lark.questions]\nchat_id = \"oc_1\"\nanswerers = [\"ou_ann\"]\n",
        )
        .expect("valid");
        assert_eq!(lark.base_url, "https://open.feishu.cn");
        let board = lark.board.expect("a board");
        assert_eq!((board.table_id, board.poll.as_secs()), (None, 10));
        let q = lark.questions.expect("questions");
        assert_eq!(
            (q.listen.to_string(), q.approvals),
            ("127.0.0.1:8790".to_owned(), false)
        );
    }

    #[test]
    fn a_secret_in_the_file_is_refused_and_named() {
        let err =
            load("[lark]\napp_id = \"cli_a1\"\napp_secret = \"s3cret\"\n").expect_err("refused");
        assert!(err.contains("LOOPX_LARK_APP_SECRET"), "{err}");
        assert!(!err.contains("s3cret"), "the secret is not echoed: {err}");
    }

    #[test]
    fn plain_http_is_for_this_machine_only() {
        assert!(load("[lark]\napp_id = \"cli_a\"\nbase_url = \"http://127.0.0.1:9/\"\n").is_ok());
        let err = load("[lark]\napp_id = \"cli_a\"\nbase_url = \"http://lark.example\"\n")
            .expect_err("refused");
        assert!(err.contains("unencrypted"), "{err}");
    }

    #[test]
    fn questions_need_answerers_that_are_open_ids() {
        let err = load("[lark]\napp_id = \"cli_a\"\n[lark.questions]\nchat_id = \"oc_1\"\n")
            .expect_err("refused");
        assert!(err.contains("answerers"), "{err}");
        let err = load(
            "[lark]\napp_id = \"cli_a\"\n[lark.questions]\nchat_id = \"oc_1\"\nanswerers = [\"ann@example.com\"]\n",
        )
        .expect_err("refused");
        assert!(err.contains("not an open_id"), "{err}");
    }

    #[test]
    fn an_unknown_key_is_named_with_a_suggestion() {
        let err =
            load("[lark]\napp_id = \"cli_a\"\n[lark.board]\napp_token = \"b\"\ntable = \"t\"\n")
                .expect_err("refused");
        assert!(err.contains("table"), "{err}");
    }
}
