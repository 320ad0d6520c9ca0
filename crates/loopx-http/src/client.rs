//! The HTTP client every loopx surface that calls out uses (the Lark API, the webhook): one
//! `ureq` agent configuration, so the TLS choice lives in one place — rustls on Linux; on macOS
//! the system's TLS and trust store (the person's own certificate settings), which also keeps
//! ring's C and assembly out of the macOS build. A status is an answer, not an error: the
//! caller reads it.

use std::time::Duration;

/// An agent whose every request ends within `timeout`.
pub fn agent(timeout: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false);
    #[cfg(target_os = "macos")]
    let config = config.tls_config(
        ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::NativeTls)
            .root_certs(ureq::tls::RootCerts::PlatformVerifier)
            .build(),
    );
    config.build().into()
}
