//! HTTPS to a model server: tick's client speaks TLS through rustls on ring (the provider
//! `tick::tls` installs before any client is built), refuses a certificate that no trusted
//! root signed, and trusts a private CA once `SSL_CERT_FILE` names it.
//!
//! The server is the fake model behind a TLS front on 127.0.0.1, with a CA and a certificate
//! made by the test. The front brings its own provider, so nothing in this process installs
//! the default but tick.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tick::llm::{Client, ClientConfig, ConnectCause, LlmError, Message, ProviderKind, Request};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::common::fake_model::FakeModel;
use crate::common::scripts::submit_login_plan;
use crate::common::text::assert_contains;
use crate::common::workspace::{Workspace, assert_success, stderr};

/// A CA, and a certificate for `127.0.0.1` that it signed.
struct Certs {
    ca_pem: String,
    server: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

impl Certs {
    fn new() -> Certs {
        let mut ca = rcgen::CertificateParams::new(Vec::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "tick test CA");
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &*ca)
            .unwrap();
        Certs {
            ca_pem: ca.pem(),
            server: server.der().clone(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        }
    }
}

/// A TLS front on 127.0.0.1 for a [`FakeModel`]: it completes each handshake with the
/// certificate of [`Certs`] and pipes the plain bytes on to the model server. It records how
/// each handshake ended: `Err` carries the server side's reading, such as the client's alert.
struct TlsFront {
    addr: SocketAddr,
    handshakes: Arc<Mutex<Vec<Result<(), String>>>>,
    task: JoinHandle<()>,
}

impl TlsFront {
    async fn start(backend: &FakeModel, certs: &Certs) -> TlsFront {
        // Its own provider, never the process default: installing that is tick's job.
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certs.server.clone()], certs.key.clone_key())
            .unwrap();
        // The fake model speaks HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let backend: SocketAddr = backend.url().trim_start_matches("http://").parse().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handshakes = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&handshakes);
        let task = tokio::spawn(async move {
            // Owned here so aborting this task also ends every connection.
            let mut connections = JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                let (acceptor, seen) = (acceptor.clone(), Arc::clone(&seen));
                connections.spawn(async move {
                    match acceptor.accept(socket).await {
                        Ok(mut tls) => {
                            seen.lock().unwrap().push(Ok(()));
                            let mut plain = TcpStream::connect(backend).await.unwrap();
                            let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                        }
                        Err(err) => seen.lock().unwrap().push(Err(err.to_string())),
                    }
                });
            }
        });
        TlsFront {
            addr,
            handshakes,
            task,
        }
    }

    /// `https://127.0.0.1:<port>`, with no path.
    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// How the handshakes so far ended, once there are `n` (waits up to 5 s: the server
    /// side may learn of a refusal a moment after the client).
    async fn handshakes(&self, n: usize) -> Vec<Result<(), String>> {
        for _ in 0..250 {
            let handshakes = self.handshakes.lock().unwrap().clone();
            if handshakes.len() >= n {
                return handshakes;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{n} TLS handshakes did not happen within 5 s");
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn hello() -> Request {
    Request {
        model: "test-model".into(),
        system: None,
        messages: vec![Message::user("hello")],
        tools: Vec::new(),
        max_tokens: Some(16),
        temperature: None,
        structured: None,
        grammar: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_no_trusted_root_signed_fails_the_call_and_names_the_certificate() {
    let server = FakeModel::start().await;
    let front = TlsFront::start(&server, &Certs::new()).await;
    // Nothing in this process installed a provider: without tick's, building the client
    // panics ("No rustls crypto provider is configured").
    let base_url = format!("{}/v1", front.url());
    let client = Client::new(ClientConfig::new(ProviderKind::OpenAi, base_url)).unwrap();
    let err = client.complete(&hello(), &mut |_| {}).await.unwrap_err();
    let LlmError::Connect {
        message,
        attempts,
        cause,
        ..
    } = &err
    else {
        panic!("not a connect error: {err:?}");
    };
    assert_contains(message, "invalid peer certificate: UnknownIssuer");
    assert_eq!(*cause, ConnectCause::Certificate);
    assert_eq!(
        *attempts, 1,
        "the same certificate would come back: no retry"
    );
    assert_contains(&err.hint().unwrap(), "`SSL_CERT_FILE`");
    // The handshake happened and the client ended it: no request reached the model.
    let handshakes = front.handshakes(1).await;
    assert_eq!(handshakes.len(), 1, "{handshakes:?}");
    assert_contains(handshakes[0].as_ref().unwrap_err(), "alert");
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_ca_is_refused_until_ssl_cert_file_names_it() {
    let project = Workspace::sample();
    let server = FakeModel::start().await;
    let certs = Certs::new();
    let front = TlsFront::start(&server, &certs).await;
    let base_url = format!("{}/v1", front.url());

    // The machine's own roots do not know the test CA.
    let output = project
        .tick_with(&server, &["plan", "Refactor login"], |cmd| {
            cmd.env("TICK_BASE_URL", &base_url);
        })
        .await;
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let err = stderr(&output);
    assert_contains(&err, "invalid peer certificate: UnknownIssuer");
    assert_contains(
        &err,
        "hint: the server's certificate is not signed by a root",
    );
    assert_contains(&err, "`SSL_CERT_FILE`");
    assert!(server.requests().is_empty(), "nothing was sent");
    assert!(!project.path(".tasks/draft/PLAN.md").exists());

    // With the CA in `SSL_CERT_FILE`, the same server is trusted and the plan lands.
    let ca = project.temp().join("ca.pem");
    std::fs::write(&ca, &certs.ca_pem).unwrap();
    server.push(submit_login_plan());
    let output = project
        .tick_with(&server, &["plan", "Refactor login"], |cmd| {
            cmd.env("TICK_BASE_URL", &base_url)
                .env("SSL_CERT_FILE", &ca);
        })
        .await;
    assert_success(&output);
    assert!(project.path(".tasks/draft/PLAN.md").exists());
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.method == "POST" && r.path == "/v1/chat/completions"),
        "{requests:?}"
    );
    // Every refused handshake was the first run's, every completed one the second's.
    let handshakes = front.handshakes(2).await;
    let first_ok = handshakes.iter().position(Result::is_ok);
    assert!(
        first_ok.is_some_and(|at| at > 0
            && handshakes[..at].iter().all(Result::is_err)
            && handshakes[at..].iter().all(Result::is_ok)),
        "{handshakes:?}"
    );
}
