//! The Open API client against the scripted Lark server: paging, batches, cards, tokens.

use loopx_lark::Client;
use loopx_lark_server::LarkServer;
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
