//! What the server holds, as JSON, for a person looking at it with `curl` (`GET
//! /scripted/state`): the tables with their fields and records, and the cards sent to chats.

use serde_json::{Value, json};

use crate::State;

pub(crate) fn state_json(state: &State) -> Value {
    let tables: Vec<Value> = state
        .tables
        .iter()
        .map(|(id, table)| {
            let fields: Vec<&str> = table.fields.iter().map(|f| f.name.as_str()).collect();
            let records: Vec<Value> = table
                .records
                .iter()
                .map(|(id, fields)| json!({"record_id": id, "fields": fields}))
                .collect();
            json!({"table_id": id, "name": table.name, "fields": fields, "records": records})
        })
        .collect();
    let messages: Vec<Value> = state
        .messages
        .iter()
        .map(|(id, m)| json!({"message_id": id, "chat_id": m.chat, "card": m.card}))
        .collect();
    json!({"app_token": state.app_token, "tables": tables, "messages": messages})
}
