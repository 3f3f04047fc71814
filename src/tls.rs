//! The TLS crypto provider that every HTTPS client of tick uses: rustls on ring, installed as
//! the process default before any `reqwest::Client` is built.
//!
//! reqwest is built without a provider of its own (aws-lc is a long C build at install time),
//! and it panics when it builds a client with no process default installed. So every place
//! that builds one, tick's model client and rmcp's streamable-HTTP transport, calls
//! [`install_crypto_provider`] first.

use std::sync::Once;

/// Installs ring as rustls's process-wide default provider; later calls do nothing.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An `Err` means a provider was already installed, by the program tick is part of:
        // that one serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installing_twice_leaves_one_default_provider() {
        install_crypto_provider();
        install_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
