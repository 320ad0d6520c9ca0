//! `[notify]`: the command run on events a person should hear about, and the webhook the same
//! notifications are posted to (`docs/cli.md`, "Notifications").

use super::{DEFAULT_NOTIFY_TIMEOUT, NotifyConfig, RawNotify};
use crate::adapter::duration_field;
use crate::config::{Problems, take};

/// `[notify] webhook_env`: the name of the environment variable that holds the URL of a
/// Slack-compatible incoming webhook. The URL itself never is in the file (anyone who has it
/// can post to the channel, and the file may be shared), as Lark's secrets are not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    pub env: String,
}

impl WebhookConfig {
    /// The webhook's URL, from `lookup` (the environment): `Ok(None)` when the variable is
    /// unset or empty; an error naming the key and the variable (never the value) when it holds
    /// no `http://` or `https://` URL.
    pub fn url(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<Option<String>, String> {
        let Some(url) = lookup(&self.env)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
        else {
            return Ok(None);
        };
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
        match host {
            Some(host) if !host.is_empty() && !url.chars().any(char::is_whitespace) => {
                Ok(Some(url))
            }
            _ => Err(format!(
                "`notify.webhook_env`: {} holds no http:// or https:// URL with a host; set it to the webhook's URL (such as https://hooks.slack.com/services/…), or unset it to post nothing",
                self.env
            )),
        }
    }
}

/// `[notify]`: its command, its webhook, or both.
pub(super) fn notify(
    mut raw: RawNotify,
    p: &mut Problems,
) -> (Option<NotifyConfig>, Option<WebhookConfig>) {
    let webhook = webhook(&mut raw, p);
    let command = match (&raw.command, &webhook) {
        (None, Some(_)) => None,
        _ => notify_command(raw, p),
    };
    (command, webhook)
}

/// `[notify] webhook_env`: a variable's name (`webhook` with a URL in the file is refused).
fn webhook(raw: &mut RawNotify, p: &mut Problems) -> Option<WebhookConfig> {
    if raw.webhook.take().is_some() {
        p.push(
            0..0,
            Some("notify.webhook"),
            "`notify.webhook` would put the webhook's URL in this file, which may be shared (anyone who has the URL can post to the channel)",
            Some("remove it, put the URL in an environment variable of loopx's, and name it: `webhook_env = \"LOOPX_NOTIFY_WEBHOOK\"`".into()),
        );
    }
    let (env, span) = take(raw.webhook_env.take(), "notify.webhook_env", p)?;
    let env = env.trim().to_owned();
    let good = env.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
        && env
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if !good {
        p.push(
            span,
            Some("notify.webhook_env"),
            format!("`{env}` is not the name of an environment variable"),
            Some("name the variable that holds the URL, in capitals: `webhook_env = \"LOOPX_NOTIFY_WEBHOOK\"`".into()),
        );
        return None;
    }
    Some(WebhookConfig { env })
}

fn notify_command(raw: RawNotify, p: &mut Problems) -> Option<NotifyConfig> {
    let timeout =
        duration_field(raw.timeout, "notify.timeout", p).unwrap_or(DEFAULT_NOTIFY_TIMEOUT);
    let (command, span) = match take(raw.command, "notify.command", p) {
        Some(found) => found,
        None => {
            p.push(
                0..0,
                Some("notify.command"),
                "`[notify]` needs a `command` or a `webhook_env`",
                Some(
                    "for example `command = \"notify-send loopx \\\"$(jq -r .message)\\\"\"`, or `webhook_env = \"LOOPX_NOTIFY_WEBHOOK\"`"
                        .into(),
                ),
            );
            return None;
        }
    };
    if command.trim().is_empty() {
        p.push(
            span,
            Some("notify.command"),
            "`notify.command` is empty",
            None,
        );
        return None;
    }
    Some(NotifyConfig { command, timeout })
}

#[cfg(test)]
mod tests {
    use crate::project::project_config_str;

    fn load(text: &str) -> Result<crate::ProjectConfig, String> {
        project_config_str("loopx.toml", text).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn a_webhook_alone_is_enough_and_its_url_comes_from_the_environment() {
        let config = load("[notify]\nwebhook_env = \"LOOPX_NOTIFY_WEBHOOK\"\n").expect("loads");
        assert_eq!(config.notify, None);
        let webhook = config.webhook.expect("a webhook");
        assert_eq!(webhook.env, "LOOPX_NOTIFY_WEBHOOK");
        let url = |value: &'static str| webhook.url(move |_| Some(value.to_owned()));
        assert_eq!(
            url(" https://hooks.example/services/T/B/x "),
            Ok(Some("https://hooks.example/services/T/B/x".to_owned()))
        );
        assert_eq!(url(""), Ok(None));
        assert_eq!(webhook.url(|_| None), Ok(None));
        for bad in [
            "ftp://hooks.example/x",
            "hooks.example/x",
            "https:///x",
            "http://a b",
        ] {
            let err = url(bad).expect_err(bad);
            assert!(
                err.contains("notify.webhook_env") && err.contains("LOOPX_NOTIFY_WEBHOOK"),
                "{err}"
            );
            assert!(
                !err.contains("hooks.example"),
                "the value is not echoed: {err}"
            );
        }
    }

    #[test]
    fn a_url_in_the_file_and_a_bad_variable_name_are_refused_by_key() {
        let err = load("[notify]\nwebhook = \"https://hooks.example/services/T/B/s3cret\"\n")
            .expect_err("refused");
        assert!(
            err.contains("notify.webhook") && err.contains("webhook_env"),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "the URL is not echoed: {err}");
        let err = load("[notify]\nwebhook_env = \"https://x\"\n").expect_err("refused");
        assert!(err.contains("notify.webhook_env"), "{err}");
        let err = load("[notify]\ntimeout = \"3s\"\n").expect_err("refused");
        assert!(err.contains("`command` or a `webhook_env`"), "{err}");
        // `[land]` shares the reader, not the webhook.
        let err = load("[land]\ncheck = \"true\"\nwebhook_env = \"X\"\n").expect_err("refused");
        assert!(err.contains("webhook_env"), "{err}");
    }
}
