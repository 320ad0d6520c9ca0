//! The Lark Open API, as loopx uses it: the tenant token, a Base table's fields and records
//! (`docs/lark.md` cites the page each shape follows).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::answers::{self, Chat, Page, RecordItem, Sent, Table, Token, Verdict};

/// Records a batch endpoint takes in one request (the documented limit of
/// `records/batch_create`, `batch_update` and `batch_delete`).
pub const BATCH: usize = 500;
/// Records a page of `records` (list) holds at most.
const PAGE: usize = 500;
/// Tries of one request Lark throttled, before giving up.
const THROTTLED_TRIES: u32 = 5;
/// The first wait after a throttled request; doubled each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// A token is renewed this long before Lark says it expires.
const TOKEN_MARGIN: Duration = Duration::from_secs(300);

/// Lark's codes for a token it no longer takes (invalid, expired).
const TOKEN_REFUSED: [i64; 3] = [99_991_661, 99_991_663, 99_991_668];

#[derive(Debug, thiserror::Error)]
pub enum LarkError {
    /// No answer (connection refused, timeout, TLS).
    #[error("Lark at {url} did not answer: {why}")]
    Transport { url: String, why: String },
    /// Lark answered with a non-zero code.
    #[error("Lark refused {what}: code {code}, {msg}{hint}")]
    Api {
        what: String,
        code: i64,
        msg: String,
        hint: String,
    },
    /// Lark kept throttling.
    #[error("Lark throttled {what} {tries} times in a row; try again later")]
    Throttled { what: String, tries: u32 },
    /// An answer that is not what the documentation says.
    #[error("Lark's answer to {what} is not what its documentation describes: {why}")]
    Shape { what: String, why: String },
}

impl LarkError {
    /// Whether trying again later may succeed (the projection retries; a refusal waits for a
    /// person to fix the configuration).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LarkError::Transport { .. } | LarkError::Throttled { .. }
        )
    }
}

/// A field of a table, as Lark lists it (`{field_id, field_name, type}`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Field {
    #[serde(rename = "field_id")]
    pub id: String,
    #[serde(rename = "field_name")]
    pub name: String,
    /// 1 text, 2 number, 3 single select, 5 date, …
    #[serde(rename = "type")]
    pub kind: i64,
}

/// A record of a table: its id and its fields by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    pub fields: serde_json::Map<String, Value>,
    /// The open_id of the person who changed it last; `None` when the app did (Lark names no
    /// user then) or it was not asked for.
    pub modified_by: Option<String>,
}

/// A client of one Lark app.
pub struct Client {
    base_url: String,
    app_id: String,
    secret: String,
    agent: ureq::Agent,
    token: Option<(String, Instant)>,
    /// Requests made, token requests included.
    pub requests: u64,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret or the token.
        f.debug_struct("Client")
            .field("base_url", &self.base_url)
            .field("app_id", &self.app_id)
            .finish_non_exhaustive()
    }
}

impl Client {
    pub fn new(base_url: &str, app_id: &str, secret: &str) -> Client {
        Client {
            base_url: base_url.trim_end_matches('/').to_owned(),
            app_id: app_id.to_owned(),
            secret: secret.to_owned(),
            agent: loopx_http::client::agent(Duration::from_secs(30)),
            token: None,
            requests: 0,
        }
    }

    /// `GET …/fields`: every field of the table.
    pub fn fields(&mut self, app: &str, table: &str) -> Result<Vec<Field>, LarkError> {
        let path = format!("/open-apis/bitable/v1/apps/{app}/tables/{table}/fields?page_size=100");
        self.pages(&path, "the table's fields")
    }

    /// `POST …/fields`: a new field, `property` as the type needs (a single select's options).
    pub fn create_field(
        &mut self,
        app: &str,
        table: &str,
        name: &str,
        kind: i64,
        property: Option<Value>,
    ) -> Result<(), LarkError> {
        let mut body = json!({"field_name": name, "type": kind});
        if let Some(property) = property {
            body["property"] = property;
        }
        let path = format!("/open-apis/bitable/v1/apps/{app}/tables/{table}/fields");
        self.call(
            "POST",
            &path,
            Some(body),
            &format!("the new field `{name}`"),
        )
        .map(drop)
    }

    /// `GET …/tables`: the Base's tables, (id, name).
    pub fn tables(&mut self, app: &str) -> Result<Vec<(String, String)>, LarkError> {
        let path = format!("/open-apis/bitable/v1/apps/{app}/tables?page_size=100");
        let items: Vec<Table> = self.pages(&path, "the Base's tables")?;
        Ok(items.into_iter().map(|t| (t.table_id, t.name)).collect())
    }

    /// `POST …/tables`: a new table named `name`; its id.
    pub fn create_table(&mut self, app: &str, name: &str) -> Result<String, LarkError> {
        let path = format!("/open-apis/bitable/v1/apps/{app}/tables");
        let body = json!({"table": {"name": name, "default_view_name": "Board"}});
        let answer = self.call("POST", &path, Some(body), "a new table")?;
        answers::data(&answer, "a new table").map(|t: Table| t.table_id)
    }

    /// `POST …/views`: a view named `name` of `kind` (`grid`, `kanban`, …).
    pub fn create_view(
        &mut self,
        app: &str,
        table: &str,
        name: &str,
        kind: &str,
    ) -> Result<(), LarkError> {
        let path = format!("/open-apis/bitable/v1/apps/{app}/tables/{table}/views");
        let body = json!({"view_name": name, "view_type": kind});
        self.call("POST", &path, Some(body), "the board's Kanban view")
            .map(drop)
    }

    /// `GET …/records`, page by page: every record of the table.
    pub fn records(&mut self, app: &str, table: &str) -> Result<Vec<Record>, LarkError> {
        // `automatic_fields` adds who changed each record last.
        let path = format!(
            "/open-apis/bitable/v1/apps/{app}/tables/{table}/records?page_size={PAGE}&automatic_fields=true"
        );
        let items: Vec<RecordItem> = self.pages(&path, "the table's records")?;
        Ok(items.into_iter().map(Record::from).collect())
    }

    /// Every item of a listing `path` (with its `page_size`), following `page_token`.
    fn pages<T: serde::de::DeserializeOwned>(
        &mut self,
        path: &str,
        what: &str,
    ) -> Result<Vec<T>, LarkError> {
        let mut out = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let path = match &page {
                Some(token) => format!("{path}&page_token={token}"),
                None => path.to_owned(),
            };
            let answer = self.call("GET", &path, None, what)?;
            let data: Page<T> = answers::data(&answer, what)?;
            page = data.next();
            out.extend(data.items.into_iter().flatten());
            if page.is_none() {
                return Ok(out);
            }
        }
    }

    /// `records/batch_create`, [`BATCH`] a request.
    pub fn create_records(
        &mut self,
        app: &str,
        table: &str,
        rows: &[serde_json::Map<String, Value>],
    ) -> Result<(), LarkError> {
        let records = rows.iter().map(|f| json!({"fields": f})).collect();
        self.batches(app, table, "batch_create", records, "new records")
    }

    /// `records/batch_update`, [`BATCH`] a request.
    pub fn update_records(
        &mut self,
        app: &str,
        table: &str,
        rows: &[(String, serde_json::Map<String, Value>)],
    ) -> Result<(), LarkError> {
        let records = rows
            .iter()
            .map(|(id, f)| json!({"record_id": id, "fields": f}))
            .collect();
        self.batches(app, table, "batch_update", records, "changed records")
    }

    /// `records/batch_delete`, [`BATCH`] a request.
    pub fn delete_records(
        &mut self,
        app: &str,
        table: &str,
        ids: &[String],
    ) -> Result<(), LarkError> {
        let records = ids.iter().map(|id| json!(id)).collect();
        self.batches(app, table, "batch_delete", records, "records to delete")
    }

    /// `records/<op>` with `records`, [`BATCH`] a request.
    fn batches(
        &mut self,
        app: &str,
        table: &str,
        op: &str,
        records: Vec<Value>,
        what: &str,
    ) -> Result<(), LarkError> {
        let path = format!("/open-apis/bitable/v1/apps/{app}/tables/{table}/records/{op}");
        for chunk in records.chunks(BATCH) {
            self.call("POST", &path, Some(json!({"records": chunk})), what)?;
        }
        Ok(())
    }

    /// `POST drive/v1/files/:file_token/subscribe?file_type=bitable`: Lark sends the app a
    /// record-change event for every change to the Base from now on.
    pub fn subscribe_base(&mut self, app: &str) -> Result<(), LarkError> {
        let path = format!("/open-apis/drive/v1/files/{app}/subscribe?file_type=bitable");
        self.call("POST", &path, Some(json!({})), "the Base's record changes")
            .map(drop)
    }

    /// `GET im/v1/chats/:chat_id`: the chat's name, when the app (its bot) is in it.
    pub fn chat_name(&mut self, chat_id: &str) -> Result<String, LarkError> {
        let path = format!("/open-apis/im/v1/chats/{chat_id}");
        let answer = self.call("GET", &path, None, "the questions' chat")?;
        answers::data(&answer, "the questions' chat").map(|c: Chat| c.name)
    }

    /// `POST im/v1/messages?receive_id_type=chat_id`: an interactive card to the chat; the
    /// message's id.
    pub fn send_card(&mut self, chat_id: &str, card: &Value) -> Result<String, LarkError> {
        let body = json!({
            "receive_id": chat_id,
            "msg_type": "interactive",
            "content": card.to_string(),
        });
        let answer = self.call(
            "POST",
            "/open-apis/im/v1/messages?receive_id_type=chat_id",
            Some(body),
            "a question's card",
        )?;
        answers::data(&answer, "a question's card").map(|s: Sent| s.message_id)
    }

    /// `PATCH im/v1/messages/:message_id`: the card shows `card` from now on.
    pub fn update_card(&mut self, message_id: &str, card: &Value) -> Result<(), LarkError> {
        let path = format!("/open-apis/im/v1/messages/{message_id}");
        let body = json!({"content": card.to_string()});
        self.call("PATCH", &path, Some(body), "a change to a card it sent")
            .map(drop)
    }

    /// Shows `card` on message `message_id`, or, when Lark refuses to change that message (an
    /// app may edit only cards it sent in the last 14 days, and a person may have recalled
    /// it), sends `card` afresh to `chat_id`. The id of the message that shows it now. A card
    /// loopx can no longer edit must not stop every later pass: a goal runs for weeks.
    pub fn show_card(
        &mut self,
        chat_id: &str,
        message_id: &str,
        card: &Value,
    ) -> Result<String, LarkError> {
        match self.update_card(message_id, card) {
            Ok(()) => Ok(message_id.to_owned()),
            Err(LarkError::Api { code, msg, .. }) => {
                tracing::info!(
                    message_id,
                    code,
                    msg,
                    "Lark refused to change a card: sent afresh"
                );
                self.send_card(chat_id, card)
            }
            Err(e) => Err(e),
        }
    }

    /// The tenant token, fetched or renewed when it is missing or about to expire.
    fn token(&mut self) -> Result<String, LarkError> {
        if let Some((token, until)) = &self.token
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let url = format!(
            "{}/open-apis/auth/v3/tenant_access_token/internal",
            self.base_url
        );
        let body = json!({"app_id": self.app_id, "app_secret": self.secret});
        let answer = self.send("POST", &url, None, Some(&body), "the app's token")?;
        let Token {
            tenant_access_token: token,
            expire,
        } = answers::whole(&answer, "the app's token")?;
        if token.is_empty() {
            return Err(LarkError::Shape {
                what: "the app's token".into(),
                why: "`tenant_access_token` is empty".into(),
            });
        }
        let until = Instant::now() + Duration::from_secs(expire).saturating_sub(TOKEN_MARGIN);
        self.token = Some((token.clone(), until));
        Ok(token)
    }

    /// One authenticated call: the answer, to decode ([`answers::data`]). A refused token is
    /// renewed once.
    fn call(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Value>,
        what: &str,
    ) -> Result<String, LarkError> {
        let url = format!("{}{path}", self.base_url);
        for renewed in [false, true] {
            let token = self.token()?;
            match self.send(method, &url, Some(&token), body.as_ref(), what) {
                Err(LarkError::Api { code, .. }) if !renewed && TOKEN_REFUSED.contains(&code) => {
                    self.token = None;
                }
                other => return other,
            }
        }
        unreachable!("the second try returns")
    }

    /// Sends one request, waiting out throttling; the answer when its `code` is 0.
    fn send(
        &mut self,
        method: &str,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
        what: &str,
    ) -> Result<String, LarkError> {
        let mut wait = FIRST_BACKOFF;
        for _ in 0..THROTTLED_TRIES {
            self.requests += 1;
            let bearer = token.map(|t| format!("Bearer {t}"));
            let response = match (method, body) {
                ("GET", _) => {
                    let mut request = self.agent.get(url);
                    if let Some(b) = &bearer {
                        request = request.header("Authorization", b);
                    }
                    request.call()
                }
                (method, body) => {
                    let request = match method {
                        "PATCH" => self.agent.patch(url),
                        _ => self.agent.post(url),
                    };
                    let mut request =
                        request.header("Content-Type", "application/json; charset=utf-8");
                    if let Some(b) = &bearer {
                        request = request.header("Authorization", b);
                    }
                    request.send(body.map(Value::to_string).unwrap_or_default())
                }
            };
            let host = url.split("/open-apis").next().unwrap_or(url);
            let mut response = response.map_err(|e| LarkError::Transport {
                url: host.to_owned(),
                why: e.to_string(),
            })?;
            let status = response.status().as_u16();
            let text = response.body_mut().read_to_string().unwrap_or_default();
            match answers::judge(status, &text, what, host) {
                Verdict::Ok => return Ok(text),
                Verdict::Err(e) => return Err(e),
                Verdict::Throttled => {
                    tracing::info!(
                        what,
                        wait_ms = wait.as_millis() as u64,
                        "Lark throttled a request"
                    );
                    std::thread::sleep(wait);
                    wait *= 2;
                }
            }
        }
        Err(LarkError::Throttled {
            what: what.to_owned(),
            tries: THROTTLED_TRIES,
        })
    }
}
