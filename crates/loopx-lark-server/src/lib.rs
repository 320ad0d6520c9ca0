//! A scripted Lark (Feishu) Open API server on 127.0.0.1, for tests.
//!
//! # Theory of operation
//!
//! It implements the endpoints loopx's Lark board uses, with the request and response shapes
//! of Lark's documentation (`docs/lark.md` cites each): the tenant token
//! (`auth/v3/tenant_access_token/internal`), and a Base's tables, fields and records (list,
//! `batch_create`, `batch_update`, `batch_delete`), in memory. It checks what Lark checks and
//! loopx could get wrong: the app secret, the bearer token on every call, at most 500 records a
//! batch, a field's value of the field's type, a record id that exists. Every answer is JSON
//! with `code` and `msg`; a refusal is a non-zero `code` (under HTTP 400, as Lark does).
//!
//! The IM side keeps the cards the app sends (`im/v1/messages`, create and patch), and
//! [`Presser`] is Lark's side of a callback: the event a button press sends, signed and
//! encrypted as Lark does, or tampered with, posted to loopx's listener. A person's change to
//! the table sends a record-change event the same way once the app subscribed to the Base
//! ([`events`]).
//!
//! The `loopx-lark-server` binary serves the same from a shell, for a person trying the board
//! without a Lark account (`docs/try-offline.md`); `GET /scripted/state` shows what it holds.
//!
//! A test drives it from the outside: [`LarkServer::state`] to read and change the table as a
//! person in Lark would, [`LarkServer::fail_next`] to make the next requests answer as
//! throttled, as an outage or with a body of the test's, and [`LarkServer::requests`] for the
//! requests it served.

mod events;
mod im;
mod presser;

pub use events::Events;
pub use im::Message;
pub use presser::{Presser, RecordChange, Signing};

use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, MutexGuard};

use loopx_model_server::http::{Request, Response};
use serde_json::{Map, Value, json};

mod inspect;

/// `GET` here answers what the server holds (tables, records, cards), with no token.
pub const STATE_PATH: &str = "/scripted/state";

/// Records a batch takes at most (Lark's documented limit).
pub const MAX_BATCH: usize = 500;

/// How a request the test asked to fail is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// HTTP 429 with code 99991400, as Lark throttles.
    Throttled,
    /// HTTP 503 without JSON: Lark is down.
    Outage,
    /// This status and body, as they are: an answer not as Lark documents it.
    Answer(u16, &'static str),
}

/// A field of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub id: String,
    pub name: String,
    pub kind: i64,
    pub options: Vec<String>,
}

/// A table of the Base.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub name: String,
    pub fields: Vec<Field>,
    /// Records by id, in creation order of their ids.
    pub records: BTreeMap<String, Map<String, Value>>,
    /// Views: (name, type).
    pub views: Vec<(String, String)>,
    /// Who last changed a record, when a person did (an open_id); a record the app wrote last
    /// is not here. Listed as `last_modified_by` with `automatic_fields=true`.
    pub modified_by: BTreeMap<String, String>,
}

/// What the server holds.
#[derive(Debug, Default)]
pub struct State {
    pub app_id: String,
    pub secret: String,
    /// The one Base, by app token: its tables by id.
    pub app_token: String,
    pub tables: BTreeMap<String, Table>,
    pub tokens_issued: u64,
    /// Messages the app sent, by id.
    pub messages: BTreeMap<String, Message>,
    /// Chats the app's bot is in: id → name.
    pub chats: BTreeMap<String, String>,
    /// Requests served: (method, path without query).
    pub requests: Vec<(String, String)>,
    /// Bases the app subscribed to (their record-change events are sent).
    pub subscribed: BTreeSet<String>,
    pub events: Events,
    failures: Vec<Failure>,
    next_id: u64,
}

impl State {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{:08}", self.next_id)
    }

    /// The only table, for tests that have one.
    pub fn table(&self) -> &Table {
        self.tables.values().next().expect("a table")
    }
}

/// The server; stops with the test process.
#[derive(Debug)]
pub struct LarkServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl LarkServer {
    /// Starts on 127.0.0.1 with an app `app_id`/`secret` and a Base `app_token`.
    pub fn start(app_id: &str, secret: &str, app_token: &str) -> std::io::Result<LarkServer> {
        LarkServer::start_on(0, app_id, secret, app_token)
    }

    /// [`LarkServer::start`] on 127.0.0.1:`port` (0: any free port).
    pub fn start_on(
        port: u16,
        app_id: &str,
        secret: &str,
        app_token: &str,
    ) -> std::io::Result<LarkServer> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            app_id: app_id.to_owned(),
            secret: secret.to_owned(),
            app_token: app_token.to_owned(),
            ..State::default()
        }));
        let server = loopx_http::Server::start(
            listener,
            loopx_model_server::http::LIMITS,
            Served(Arc::clone(&state)),
        )?;
        // It serves until the test process ends.
        std::thread::spawn(move || server.wait());
        Ok(LarkServer { addr, state })
    }

    /// `http://127.0.0.1:PORT`, for `lark.base_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next requests answer as `failures` say, one each, in order.
    pub fn fail_next(&self, failures: &[Failure]) {
        self.state().failures.extend_from_slice(failures);
    }

    /// Lark is back: the failures not yet served are forgotten.
    pub fn recover(&self) {
        self.state().failures.clear();
    }

    /// A person (`open_id`) changes `fields` of the record of todo `todo` in Lark, as the
    /// table's UI would (and Lark sends its record-change event); its record id.
    pub fn edit_as(&self, open_id: &str, todo: &str, fields: Value) -> String {
        self.edit_all(&[(open_id, todo, fields)]).remove(0)
    }

    /// People's changes `(open_id, todo, fields)` made at once: no request of loopx's comes
    /// between them. Their record ids.
    pub fn edit_all(&self, edits: &[(&str, &str, Value)]) -> Vec<String> {
        let mut ids = Vec::new();
        let mut changes = Vec::new();
        {
            let mut state = self.state();
            for (open_id, todo, fields) in edits {
                let fields = fields.as_object().cloned().unwrap_or_default();
                let table = state.tables.values_mut().next().expect("a table");
                let id = table
                    .records
                    .iter()
                    .find(|(_, f)| f.get("Todo ID").and_then(Value::as_str) == Some(*todo))
                    .map(|(id, _)| id.clone())
                    .unwrap_or_else(|| panic!("no record of {todo}"));
                let record = table.records.get_mut(&id).expect("found");
                let before = record.clone();
                for (name, value) in &fields {
                    record.insert(name.clone(), value.clone());
                }
                table.modified_by.insert(id.clone(), (*open_id).to_owned());
                let change =
                    events::change_of(&mut state, open_id, &id, "record_edited", &before, &fields);
                changes.extend(change);
                ids.push(id);
            }
        }
        self.send(changes);
        ids
    }

    /// A person (`open_id`) adds a row with `fields` in Lark; its record id.
    pub fn add_as(&self, open_id: &str, fields: Value) -> String {
        let fields = fields.as_object().cloned().unwrap_or_default();
        let (id, change) = {
            let mut state = self.state();
            let id = state.id("rec");
            let table = state.tables.values_mut().next().expect("a table");
            table.records.insert(id.clone(), fields.clone());
            table.modified_by.insert(id.clone(), open_id.to_owned());
            let change = events::change_of(
                &mut state,
                open_id,
                &id,
                "record_added",
                &Map::new(),
                &fields,
            );
            (id, change)
        };
        self.send(change.into_iter().collect());
        id
    }

    /// Requests served so far: (method, path).
    pub fn requests(&self) -> Vec<(String, String)> {
        self.state().requests.clone()
    }

    /// Adds a table with no fields; its id.
    pub fn add_table(&self, name: &str) -> String {
        let mut state = self.state();
        let id = state.id("tbl");
        state.tables.insert(
            id.clone(),
            Table {
                name: name.to_owned(),
                ..Table::default()
            },
        );
        id
    }
}

/// The server as `loopx-http` serves it.
struct Served(Arc<Mutex<State>>);

impl loopx_http::Service for Served {
    type Conn = ();

    fn accept(&self, _: &std::net::TcpStream) -> Result<(), loopx_http::Response> {
        Ok(())
    }

    fn handle(&self, _: &(), request: Request) -> loopx_http::Response {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        answer(&mut state, &request).into()
    }
}

fn ok(data: Value) -> Response {
    Response::json(200, &json!({"code": 0, "msg": "success", "data": data}))
}

fn refuse(code: i64, msg: &str) -> Response {
    Response::json(400, &json!({"code": code, "msg": msg}))
}

fn answer(state: &mut State, request: &Request) -> Response {
    let path = request.path.clone();
    // Not Lark's: what a person trying the board offline looks at (`docs/try-offline.md`).
    if request.method == "GET" && path == STATE_PATH {
        return Response::json(200, &inspect::state_json(state));
    }
    state.requests.push((request.method.clone(), path.clone()));
    if !state.failures.is_empty() {
        return match state.failures.remove(0) {
            Failure::Throttled => Response::json(
                429,
                &json!({"code": 99_991_400, "msg": "request trigger frequency limit"}),
            ),
            Failure::Outage => Response {
                status: 503,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: b"upstream unavailable".to_vec(),
            },
            Failure::Answer(status, body) => Response {
                status,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: body.as_bytes().to_vec(),
            },
        };
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    if path == "/open-apis/auth/v3/tenant_access_token/internal" {
        if body["app_id"] != state.app_id.as_str() || body["app_secret"] != state.secret.as_str() {
            return refuse(10_014, "app secret invalid");
        }
        state.tokens_issued += 1;
        let token = format!("t-{}", state.tokens_issued);
        return Response::json(
            200,
            &json!({"code": 0, "msg": "ok", "tenant_access_token": token, "expire": 7200}),
        );
    }
    let bearer = request.header("authorization").unwrap_or_default();
    let live = format!("Bearer t-{}", state.tokens_issued);
    if state.tokens_issued == 0 || bearer != live {
        return refuse(99_991_663, "Invalid access token for authorization");
    }
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (request.method.as_str(), parts.as_slice()) {
        ("GET", ["open-apis", "im", "v1", "chats", chat]) => match state.chats.get(*chat) {
            Some(name) => ok(json!({"chat_id": chat, "name": name, "chat_mode": "group"})),
            None => refuse(232_011, "the app is not in the chat"),
        },
        ("POST", ["open-apis", "drive", "v1", "files", token, "subscribe"]) => {
            events::subscribe(state, token, &request.target)
        }
        (method, ["open-apis", "im", "v1", "messages", rest @ ..]) => {
            im::im(state, method, rest, &body, &request.target)
        }
        (method, ["open-apis", "bitable", "v1", "apps", app, rest @ ..]) => {
            if *app != state.app_token {
                return refuse(1_254_003, "WrongBaseToken");
            }
            bitable(state, method, rest, &body, &request.target)
        }
        _ => refuse(404, "no such endpoint in the scripted server"),
    }
}

fn bitable(state: &mut State, method: &str, rest: &[&str], body: &Value, target: &str) -> Response {
    match (method, rest) {
        ("POST", ["tables"]) => {
            let name = body["table"]["name"].as_str().unwrap_or("Table").to_owned();
            let id = state.id("tbl");
            state.tables.insert(
                id.clone(),
                Table {
                    name,
                    ..Table::default()
                },
            );
            ok(json!({"table_id": id, "default_view_id": "vew1", "field_id_list": []}))
        }
        ("GET", ["tables"]) => {
            let items: Vec<Value> = state
                .tables
                .iter()
                .map(|(id, t)| json!({"table_id": id, "name": t.name, "revision": 1}))
                .collect();
            ok(json!({"has_more": false, "page_token": null, "total": items.len(), "items": items}))
        }
        (method, ["tables", table, rest @ ..]) => {
            let table_id = (*table).to_owned();
            if !state.tables.contains_key(&table_id) {
                return refuse(1_254_004, "WrongTableId");
            }
            table_call(state, &table_id, method, rest, body, target)
        }
        _ => refuse(404, "no such endpoint in the scripted server"),
    }
}

fn table_call(
    state: &mut State,
    table_id: &str,
    method: &str,
    rest: &[&str],
    body: &Value,
    target: &str,
) -> Response {
    match (method, rest) {
        ("GET", ["fields"]) => {
            let table = &state.tables[table_id];
            let items: Vec<Value> = table
                .fields
                .iter()
                .map(|f| json!({"field_id": f.id, "field_name": f.name, "type": f.kind, "property": null}))
                .collect();
            ok(json!({"has_more": false, "page_token": null, "total": items.len(), "items": items}))
        }
        ("POST", ["fields"]) => {
            let (Some(name), Some(kind)) = (body["field_name"].as_str(), body["type"].as_i64())
            else {
                return refuse(1_254_001, "WrongRequestBody");
            };
            if state.tables[table_id].fields.iter().any(|f| f.name == name) {
                return refuse(1_254_014, "FieldNameDuplicated");
            }
            let options = body["property"]["options"]
                .as_array()
                .map(|o| {
                    o.iter()
                        .filter_map(|o| o["name"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let id = state.id("fld");
            let field = Field {
                id: id.clone(),
                name: name.to_owned(),
                kind,
                options,
            };
            state
                .tables
                .get_mut(table_id)
                .expect("checked")
                .fields
                .push(field);
            ok(json!({"field": {"field_id": id, "field_name": name, "type": kind}}))
        }
        ("GET", ["records"]) => list_records(&state.tables[table_id], target),
        ("POST", ["views"]) => {
            let (Some(name), Some(kind)) = (body["view_name"].as_str(), body["view_type"].as_str())
            else {
                return refuse(1_254_001, "WrongRequestBody");
            };
            if !["grid", "kanban", "gallery", "gantt", "form"].contains(&kind) {
                return refuse(1_254_001, "WrongRequestBody: view_type");
            }
            let view = (name.to_owned(), kind.to_owned());
            state
                .tables
                .get_mut(table_id)
                .expect("checked")
                .views
                .push(view);
            let id = state.id("vew");
            ok(json!({"view": {"view_id": id, "view_name": name, "view_type": kind}}))
        }
        (
            "POST",
            [
                "records",
                op @ ("batch_create" | "batch_update" | "batch_delete"),
            ],
        ) => {
            let Some(records) = body["records"].as_array() else {
                return refuse(1_254_001, "WrongRequestBody");
            };
            if records.len() > MAX_BATCH {
                return refuse(1_254_104, "RecordAddOnceExceedLimit");
            }
            match *op {
                "batch_create" => batch_create(state, table_id, records),
                "batch_update" => batch_update(state, table_id, records),
                _ => batch_delete(state, table_id, records),
            }
        }
        _ => refuse(404, "no such endpoint in the scripted server"),
    }
}

/// A page of records; `page_token` is the index to start from.
fn list_records(table: &Table, target: &str) -> Response {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let param = |name: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let size = param("page_size").unwrap_or(20).min(500);
    let start = param("page_token").unwrap_or(0);
    let items: Vec<Value> = table
        .records
        .iter()
        .skip(start)
        .take(size)
        .map(|(id, fields)| {
            let mut item = json!({"record_id": id, "fields": fields});
            if query.split('&').any(|kv| kv == "automatic_fields=true") {
                item["last_modified_by"] = match table.modified_by.get(id) {
                    Some(open_id) => json!({"id": open_id, "name": "A person"}),
                    // The app wrote it last: Lark names no user.
                    None => json!({"id": ""}),
                };
            }
            item
        })
        .collect();
    let more = start + size < table.records.len();
    ok(json!({
        "has_more": more,
        "page_token": if more { json!((start + size).to_string()) } else { Value::Null },
        "total": table.records.len(),
        "items": items,
    }))
}

/// Why `fields` cannot be written to `table`, if they cannot: an unknown field, or a value of
/// the wrong type (`null` clears a cell).
fn check_fields(table: &Table, fields: &Map<String, Value>) -> Option<Response> {
    for (name, value) in fields {
        let Some(field) = table.fields.iter().find(|f| &f.name == name) else {
            return Some(refuse(1_254_045, &format!("FieldNameNotFound: {name}")));
        };
        let fits = match (field.kind, value) {
            (_, Value::Null) => true,
            (1, Value::String(_)) => true,
            (2, Value::Number(_)) => true,
            (3, Value::String(s)) => field.options.iter().any(|o| o == s),
            (5, Value::Number(n)) => n.is_u64(),
            _ => false,
        };
        if !fits {
            return Some(refuse(1_254_015, &format!("FieldConvFail: {name}")));
        }
    }
    None
}

fn without_nulls(fields: &Map<String, Value>) -> Map<String, Value> {
    fields
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn batch_create(state: &mut State, table_id: &str, records: &[Value]) -> Response {
    for r in records {
        if let Some(refused) = check_fields(
            &state.tables[table_id],
            &r["fields"].as_object().cloned().unwrap_or_default(),
        ) {
            return refused;
        }
    }
    let mut out = Vec::new();
    for r in records {
        let id = state.id("rec");
        let fields = without_nulls(&r["fields"].as_object().cloned().unwrap_or_default());
        out.push(json!({"record_id": id, "fields": fields}));
        state
            .tables
            .get_mut(table_id)
            .expect("checked")
            .records
            .insert(id, fields);
    }
    ok(json!({"records": out}))
}

fn batch_update(state: &mut State, table_id: &str, records: &[Value]) -> Response {
    let table = &state.tables[table_id];
    for r in records {
        let id = r["record_id"].as_str().unwrap_or_default();
        if !table.records.contains_key(id) {
            return refuse(1_254_043, &format!("RecordIdNotFound: {id}"));
        }
        if let Some(refused) =
            check_fields(table, &r["fields"].as_object().cloned().unwrap_or_default())
        {
            return refused;
        }
    }
    let table = state.tables.get_mut(table_id).expect("checked");
    let mut out = Vec::new();
    for r in records {
        let id = r["record_id"].as_str().unwrap_or_default();
        table.modified_by.remove(id);
        let record = table.records.get_mut(id).expect("checked");
        for (name, value) in r["fields"].as_object().cloned().unwrap_or_default() {
            match value {
                Value::Null => record.remove(&name),
                value => record.insert(name, value),
            };
        }
        out.push(json!({"record_id": id, "fields": record}));
    }
    ok(json!({"records": out}))
}

fn batch_delete(state: &mut State, table_id: &str, records: &[Value]) -> Response {
    let table = state.tables.get_mut(table_id).expect("checked");
    let ids: Vec<&str> = records.iter().filter_map(Value::as_str).collect();
    if let Some(missing) = ids.iter().find(|id| !table.records.contains_key(**id)) {
        return refuse(1_254_043, &format!("RecordIdNotFound: {missing}"));
    }
    let out: Vec<Value> = ids
        .iter()
        .map(|id| {
            table.records.remove(*id);
            table.modified_by.remove(*id);
            json!({"deleted": true, "record_id": id})
        })
        .collect();
    ok(json!({"records": out}))
}
