//! # Theory of operation
//!
//! `loopx-model-server` is a test helper: a tiny HTTP/1.1 server on 127.0.0.1 that plays a
//! [`Script`] of model turns, so the real agent CLIs (Claude Code, Codex, Qwen Code, OpenCode) can be driven end to
//! end with no network and no account. It is never a dependency of a shipped crate.
//!
//! - **APIs.** `POST /v1/messages` answers in the Anthropic Messages format (SSE when the
//!   request says `"stream": true`, else one JSON message); `POST /v1/responses` answers in
//!   the OpenAI Responses format that Codex's `wire_api = "responses"` reads; `POST
//!   /v1/chat/completions` in the Chat Completions format of OpenAI-compatible clients (Qwen
//!   Code, OpenCode). Side requests
//!   (`/v1/messages/count_tokens`, `GET /v1/models`, probes of `/`) get small sensible answers
//!   and never consume a turn; anything else is a 404, and a malformed request a 400 with a
//!   message. Nothing a client sends can panic the server.
//! - **Scripts.** Each model request takes the next [`Turn`]: a [`Reply`] (text and/or
//!   [`ToolCall`]s, with [`Usage`]) rendered in the request's API, or an [`ErrorAnswer`]
//!   (status, headers such as `retry-after` or `anthropic-ratelimit-unified-*`, JSON body) sent
//!   verbatim. [`WhenDone`] says what follows the last turn. Scripts are JSON files or Rust
//!   values; the format is documented on the [`script`] module.
//! - **Recording.** Every request is kept as a [`RecordedRequest`] (credential headers
//!   redacted) with the [`Answer`] it got, for assertions via [`ModelServer::requests`] and,
//!   from the binary, as JSON lines in a log file.
//! - **Lifetime.** [`ModelServer::start`] binds (port 0 = any), serves through `loopx-http`, and stops
//!   when the handle is dropped. The `loopx-model-server` binary ([`cli`]) does the same from a
//!   shell and writes the port to a file, so one `unshare -rn` command can start it in the
//!   background and run a CLI against it.
//!
//! - **Conformance.** [`conform`] runs an agent profile through `loopx run --once` against the
//!   standard scripts and prints what loopx classified (`loopx-model-server conform`).
//!
//! HTTP is `loopx-http`'s (hyper, under the limits in `http.rs`: 64 MiB bodies, a request
//! whole within 60 s): one request per connection, and a streamed answer is rendered whole,
//! then sent with `Content-Length`. What the real CLIs sent and did against it is recorded in
//! `docs/design/model-server.md`.

pub mod cli;
pub mod conform;
mod errors;
/// The answers this server gives, shared with the scripted Lark server (`loopx-lark-server`).
pub mod http;
mod record;
mod render;
pub mod script;
mod server;
/// The commands of a walk-through page, for the tests that run them as printed.
pub mod walkthrough;

pub use errors::{ScriptError, StartError};
pub use record::{Answer, RecordedRequest};
pub use script::{ErrorAnswer, Reply, Script, ToolCall, ToolKind, Turn, Usage, WhenDone};
pub use server::ModelServer;
