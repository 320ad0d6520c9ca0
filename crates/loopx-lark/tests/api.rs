//! The Open API client against the scripted Lark server: paging, batches, cards, tokens.

use loopx_lark::{Client, LarkError};
use loopx_lark_server::{Failure, LarkServer};
use serde_json::{Map, Value, json};

fn server() -> (LarkServer, Client) {
    let server = LarkServer::start("cli_a", "sec", "bas").expect("server");
    let client = Client::new(&server.url(), "cli_a", "sec");
    (server, client)
}

#[test]
fn a_table_of_1200_records_is_read_in_three_pages_and_written_in_three_batches() {
    let (server, mut client) = server();
    let table = server.add_table("loopx");
    client
        .create_field("bas", &table, "Task", 1, None)
        .expect("field");
    let rows: Vec<Map<String, Value>> = (0..1200)
        .map(|i| {
            json!({"Task": format!("todo {i}")})
                .as_object()
                .cloned()
                .expect("map")
        })
        .collect();
    let before = server.requests().len();
    client
        .create_records("bas", &table, &rows)
        .expect("created");
    let writes = server.requests()[before..]
        .iter()
        .filter(|(_, p)| p.ends_with("batch_create"))
        .count();
    assert_eq!(writes, 3);
    let before = server.requests().len();
    let records = client.records("bas", &table).expect("read");
    assert_eq!(records.len(), 1200);
    assert_eq!(server.requests().len() - before, 3, "500 a page");
}

#[test]
fn a_card_is_sent_and_changed() {
    let (server, mut client) = server();
    let id = client
        .send_card("oc_1", &json!({"schema": "2.0", "body": {"elements": []}}))
        .expect("sent");
    client
        .update_card(
            &id,
            &json!({"schema": "2.0", "body": {"elements": [{"tag": "div"}]}}),
        )
        .expect("changed");
    let state = server.state();
    assert_eq!(state.messages[&id].patches, 1);
    assert_eq!(state.messages[&id].chat, "oc_1");
}

#[test]
fn a_token_lark_no_longer_takes_is_fetched_again_once() {
    let (server, mut client) = server();
    let table = server.add_table("loopx");
    client.fields("bas", &table).expect("first call");
    // Lark forgets the token (as after its expiry): the next call gets a new one.
    server.state().tokens_issued += 1;
    client.fields("bas", &table).expect("renewed");
    assert_eq!(server.state().tokens_issued, 3);
}

#[test]
fn a_wrong_secret_is_a_refusal_with_its_code_and_no_secret_in_it() {
    let server = LarkServer::start("cli_a", "sec", "bas").expect("server");
    let mut client = Client::new(&server.url(), "cli_a", "not-the-secret");
    let err = client.tables("bas").expect_err("refused").to_string();
    assert!(err.contains("code 10014"), "{err}");
    assert!(!err.contains("not-the-secret"), "{err}");
    assert!(!format!("{client:?}").contains("not-the-secret"));
}

/// What Lark sent that is not what its documentation describes is an error naming the field
/// and what came, never a silent empty value (a field of type 0, a record without an id).
#[test]
fn an_answer_not_as_documented_names_the_field_and_what_lark_sent() {
    let (server, mut client) = server();
    let table = server.add_table("loopx");
    let shape = |e: LarkError| match e {
        LarkError::Shape { why, .. } => why,
        other => panic!("not a shape error: {other}"),
    };
    // The token answer, with `expire` as a string.
    server.fail_next(&[Failure::Answer(
        200,
        r#"{"code":0,"msg":"ok","tenant_access_token":"t-1","expire":"7200"}"#,
    )]);
    let why = shape(client.fields("bas", &table).expect_err("refused"));
    assert!(
        why.starts_with(r#"expire: invalid type: string "7200", expected u64"#),
        "{why}"
    );
    client.fields("bas", &table).expect("a token as documented");
    server.fail_next(&[Failure::Answer(
        200,
        r#"{"code":0,"msg":"success","data":{"has_more":false,"items":[
            {"field_id":"fld1","field_name":"Task","type":"1"}]}}"#,
    )]);
    let why = shape(client.fields("bas", &table).expect_err("refused"));
    assert!(
        why.starts_with(r#"data.items[0].type: invalid type: string "1", expected i64"#),
        "{why}"
    );
    server.fail_next(&[Failure::Answer(
        200,
        r#"{"code":0,"msg":"success","data":{"has_more":false,"items":[{"fields":{}}]}}"#,
    )]);
    let why = shape(client.records("bas", &table).expect_err("refused"));
    assert!(
        why.starts_with("data.items[0]: missing field `record_id`"),
        "{why}"
    );
}

/// Lark's error envelope comes under HTTP 200 as well as 400: the code decides.
#[test]
fn an_error_envelope_under_http_200_is_a_refusal_with_its_code_and_what_to_do() {
    let (server, mut client) = server();
    client.tables("bas").expect("a token");
    server.fail_next(&[Failure::Answer(
        200,
        r#"{"code":1254003,"msg":"WrongBaseToken","error":{"log_id":"20240101"}}"#,
    )]);
    let err = client.tables("bas").expect_err("refused");
    assert!(!err.is_transient());
    let text = err.to_string();
    assert!(
        text.contains("code 1254003, WrongBaseToken (check lark.board.app_token"),
        "{text}"
    );
}
