//! Lark's answers as types, each the shape its documentation page gives (`docs/lark.md`, "The
//! Open API, as loopx uses it"). A field missing or of another type is an error that names it
//! by its path and says what Lark sent (`data.items[0].type: invalid type: string "1",
//! expected i64`), never a silent empty value.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::api::{LarkError, Record};

/// Lark's code for "request trigger frequency limit".
pub(crate) const THROTTLED: i64 = 99_991_400;

/// Every answer: `{code, msg, data}`; a non-zero `code` is an error even under HTTP 200.
#[derive(Deserialize)]
struct Head {
    code: i64,
    msg: Option<String>,
}

/// The `data` of an answer whose `code` is 0.
#[derive(Deserialize)]
struct Envelope<T> {
    data: T,
}

/// `POST auth/v3/tenant_access_token/internal`: the token beside `code`, not in `data`.
#[derive(Deserialize)]
pub(crate) struct Token {
    pub tenant_access_token: String,
    /// Seconds.
    pub expire: u64,
}

/// A page of a listing (tables, fields, records).
#[derive(Deserialize)]
pub(crate) struct Page<T> {
    #[serde(default)]
    pub has_more: bool,
    pub page_token: Option<String>,
    /// Left out of an empty page (or `null`).
    pub items: Option<Vec<T>>,
}

impl<T> Page<T> {
    /// The token of the next page, when there is one.
    pub fn next(&self) -> Option<String> {
        self.page_token.clone().filter(|_| self.has_more)
    }
}

/// `tables` (list) and `tables` (create).
#[derive(Deserialize)]
pub(crate) struct Table {
    pub table_id: String,
    /// The list's; the answer to a create leaves it out.
    #[serde(default)]
    pub name: String,
}

/// `im/v1/chats/:chat_id`.
#[derive(Deserialize)]
pub(crate) struct Chat {
    /// A chat may have no name.
    #[serde(default)]
    pub name: String,
}

/// `im/v1/messages` (send).
#[derive(Deserialize)]
pub(crate) struct Sent {
    pub message_id: String,
}

/// An item of `records` (list).
#[derive(Deserialize)]
pub(crate) struct RecordItem {
    record_id: String,
    /// Left out (or `null`) when every cell is empty.
    fields: Option<Map<String, Value>>,
    /// With `automatic_fields`; no user (`id` empty or left out) when the app changed it.
    last_modified_by: Option<Person>,
}

#[derive(Deserialize)]
struct Person {
    id: Option<String>,
}

impl From<RecordItem> for Record {
    fn from(item: RecordItem) -> Record {
        Record {
            id: item.record_id,
            fields: item.fields.unwrap_or_default(),
            modified_by: item
                .last_modified_by
                .and_then(|p| p.id)
                .filter(|id| id.starts_with("ou_")),
        }
    }
}

/// What one answer says, by its HTTP status and body.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// `code` 0: the body, to decode.
    Ok,
    /// Throttled: wait, and try again.
    Throttled,
    Err(LarkError),
}

/// Reads the head of an answer to `what` from `host`.
pub(crate) fn judge(status: u16, body: &str, what: &str, host: &str) -> Verdict {
    let head = from_text::<Head>(body);
    let code = head.as_ref().ok().map(|h| h.code);
    // Lark (or a proxy before it) in trouble: like no answer, worth trying later.
    if status >= 500 && code != Some(0) {
        return Verdict::Err(LarkError::Transport {
            url: host.to_owned(),
            why: format!("HTTP {status}"),
        });
    }
    if status == 429 || code == Some(THROTTLED) {
        return Verdict::Throttled;
    }
    match head {
        Ok(Head { code: 0, .. }) => Verdict::Ok,
        Ok(Head { code, msg }) => Verdict::Err(LarkError::Api {
            what: what.to_owned(),
            code,
            msg: msg.unwrap_or_else(|| "no message".to_owned()),
            hint: hint(code),
        }),
        Err(why) => Verdict::Err(LarkError::Shape {
            what: what.to_owned(),
            why: format!("HTTP {status}, {why}"),
        }),
    }
}

/// The `data` of an answer to `what`.
pub(crate) fn data<T: DeserializeOwned>(body: &str, what: &str) -> Result<T, LarkError> {
    whole(body, what).map(|e: Envelope<T>| e.data)
}

/// An answer to `what` as `T`, whole.
pub(crate) fn whole<T: DeserializeOwned>(body: &str, what: &str) -> Result<T, LarkError> {
    from_text(body).map_err(|why| LarkError::Shape {
        what: what.to_owned(),
        why,
    })
}

/// `T` from JSON text; why not, naming the field by its path.
pub(crate) fn from_text<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    from_bytes(text.as_bytes())
}

/// `T` from JSON bytes; why not, naming the field by its path.
pub(crate) fn from_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// `T` from JSON already read; why not, naming the field by its path.
pub(crate) fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| e.to_string())
}

/// What a person can do about a refusal, for the codes a setup meets first.
fn hint(code: i64) -> String {
    let hint = match code {
        10_003 | 10_014 => "check lark.app_id and LOOPX_LARK_APP_SECRET",
        232_011 | 232_025 | 230_002 => "add the app's bot to the chat of lark.questions.chat_id",
        99_991_672 | 1_254_302 | 91_403 => {
            "the app lacks a permission: grant it `bitable:app` in the developer console and add the app to the Base"
        }
        1_254_003 | 1_254_004 => "check lark.board.app_token and table_id",
        _ => return String::new(),
    };
    format!(" ({hint})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Field;

    fn shape(e: LarkError) -> String {
        match e {
            LarkError::Shape { why, .. } => why,
            other => panic!("not a shape error: {other}"),
        }
    }

    /// The example answer of "List fields", trimmed to what loopx reads and one field more.
    #[test]
    fn a_page_of_fields_as_lark_documents_it() {
        let body = r#"{"code":0,"msg":"success","data":{"has_more":true,"page_token":"fldP",
            "total":2,"items":[{"field_id":"fldA","field_name":"Task","type":1,"property":null,
            "is_primary":true},{"field_id":"fldB","field_name":"Status","type":3,
            "property":{"options":[{"name":"Open","id":"optX","color":0}]}}]}}"#;
        assert!(matches!(judge(200, body, "fields", "h"), Verdict::Ok));
        let page: Page<Field> = data(body, "fields").expect("a page");
        assert_eq!(page.next().as_deref(), Some("fldP"));
        let fields = page.items.expect("items");
        assert_eq!(
            (
                fields[1].id.as_str(),
                fields[1].name.as_str(),
                fields[1].kind
            ),
            ("fldB", "Status", 3)
        );
    }

    #[test]
    fn an_empty_page_leaves_out_items_or_sends_null() {
        for body in [
            r#"{"code":0,"msg":"success","data":{"has_more":false,"total":0}}"#,
            r#"{"code":0,"msg":"success","data":{"has_more":false,"page_token":null,"items":null}}"#,
        ] {
            let page: Page<RecordItem> = data(body, "records").expect("a page");
            assert!(page.items.is_none() && page.next().is_none(), "{body}");
        }
    }

    #[test]
    fn a_record_names_a_person_only_by_an_open_id() {
        let body = r#"{"code":0,"msg":"success","data":{"has_more":false,"items":[
            {"record_id":"rec1","fields":{"Task":[{"type":"text","text":"a"}]},
             "last_modified_by":{"id":"ou_ann","name":"Ann"}},
            {"record_id":"rec2","last_modified_by":{"id":""}},
            {"record_id":"rec3","fields":{}}]}}"#;
        let page: Page<RecordItem> = data(body, "records").expect("a page");
        let records: Vec<Record> = page.items.into_iter().flatten().map(Record::from).collect();
        let by: Vec<Option<&str>> = records.iter().map(|r| r.modified_by.as_deref()).collect();
        assert_eq!(by, [Some("ou_ann"), None, None]);
        assert!(records[1].fields.is_empty());
    }

    #[test]
    fn a_field_of_another_type_is_named_with_what_lark_sent() {
        let body = r#"{"code":0,"msg":"success","data":{"has_more":false,
            "items":[{"field_id":"fldA","field_name":"Task","type":"1"}]}}"#;
        let why = shape(data::<Page<Field>>(body, "fields").err().expect("refused"));
        assert!(
            why.starts_with("data.items[0].type: invalid type: string \"1\", expected i64"),
            "{why}"
        );
        let why = shape(
            whole::<Token>(r#"{"code":0,"msg":"ok","expire":7200}"#, "token")
                .err()
                .expect("refused"),
        );
        assert!(why.contains("missing field `tenant_access_token`"), "{why}");
        let why = shape(
            data::<Sent>(r#"{"code":0,"msg":"ok","data":{"message_id":7}}"#, "card")
                .err()
                .expect("refused"),
        );
        assert!(
            why.starts_with("data.message_id: invalid type: integer `7`"),
            "{why}"
        );
    }

    #[test]
    fn a_refusal_under_http_200_is_an_error_with_its_code_and_what_to_do() {
        let body = r#"{"code":1254003,"msg":"WrongBaseToken","error":{"log_id":"2024"}}"#;
        match judge(200, body, "the table's records", "h") {
            Verdict::Err(
                e @ LarkError::Api {
                    code: 1_254_003, ..
                },
            ) => {
                let text = e.to_string();
                assert!(
                    text.contains("WrongBaseToken") && text.contains("check lark.board.app_token"),
                    "{text}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn throttling_trouble_and_a_body_without_a_code_are_told_apart() {
        let throttled = r#"{"code":99991400,"msg":"request trigger frequency limit"}"#;
        assert!(matches!(
            judge(200, throttled, "w", "h"),
            Verdict::Throttled
        ));
        assert!(matches!(judge(429, "", "w", "h"), Verdict::Throttled));
        assert!(matches!(
            judge(502, "<html>Bad Gateway</html>", "w", "h"),
            Verdict::Err(LarkError::Transport { .. })
        ));
        match judge(200, r#"{"code":"0","msg":"ok"}"#, "w", "h") {
            Verdict::Err(LarkError::Shape { why, .. }) => assert!(
                why.starts_with("HTTP 200, code: invalid type: string \"0\", expected i64"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
