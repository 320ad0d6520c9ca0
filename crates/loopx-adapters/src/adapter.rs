//! Adapters: how to launch and read one agent runtime. Loaded from `adapters/*.toml` (shipped,
//! embedded in the binary) or a project's `.loopx/adapters/*.toml` (which override by name).

mod catalog;
mod raw;
mod spec;
mod validate;

pub(crate) use catalog::toml_stem;
pub use catalog::{AdapterCatalog, BUILTIN_ADAPTERS, load_adapter_file, load_adapter_str};
pub use spec::{
    Adapter, AdapterOptions, ExitMeaning, HealthCheck, OutputFormat, PromptDeliveryKind,
    SignalKind, SignalRule, SignalScope, StdinMode,
};
pub(crate) use validate::{check_placeholders, duration, duration_field, env_names, one_of};
