//! Stored values: one record-version byte, then postcard.
//!
//! postcard is compact and fast to decode (a `todo list` of 10,000 todos decodes in about a
//! millisecond) but not self-describing: a field added to a stored type changes the encoding.
//! Such a change bumps [`RECORD_VERSION`] and keeps a decoder for the old version, so that a new
//! loopx reads old files; an old loopx refuses newer records with a clear error instead of
//! misreading them.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::errors::StoreError;

/// The encoding of every record this loopx writes.
pub(crate) const RECORD_VERSION: u8 = 1;

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = vec![RECORD_VERSION];
    // Serializing our own plain data into a Vec cannot fail.
    let body = postcard::to_allocvec(value).expect("postcard encodes plain data into a Vec");
    bytes.extend_from_slice(&body);
    bytes
}

pub(crate) fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T, StoreError> {
    match bytes.split_first() {
        Some((&RECORD_VERSION, body)) => {
            postcard::from_bytes(body).map_err(|e| StoreError::Decode {
                table: table.to_owned(),
                why: e.to_string(),
            })
        }
        Some((&version, _)) => Err(StoreError::Decode {
            table: table.to_owned(),
            why: format!(
                "record version {version} is newer than this loopx reads ({RECORD_VERSION}); upgrade loopx"
            ),
        }),
        None => Err(StoreError::Decode {
            table: table.to_owned(),
            why: "empty record".to_owned(),
        }),
    }
}
