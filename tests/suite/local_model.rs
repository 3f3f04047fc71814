//! `tick model ...` from the binary: the embedded setup script with its heavy phases replaced
//! by a fake build (`TICK_LOCAL_BUILD_CMD`: a few lines of shell that leave a tiny Python
//! `llama-server`) and a fake download (`TICK_LOCAL_FETCH_CMD`), in a cache directory of the
//! test's own. Setup is idempotent, resumes after a kill mid-build, and starts a server that
//! tick then finds by itself.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::text::assert_contains;
use crate::common::workspace::Workspace;

/// A stand-in for llama.cpp's server: answers `/health` and `/v1/models` on `--port`.
/// It names its process `llama-server`: the script stops only a process of that name.
const FAKE_SERVER: &str = r#"#!/usr/bin/env python3
import ctypes, http.server, json, sys
ctypes.CDLL(None).prctl(15, b"llama-server", 0, 0, 0)  # PR_SET_NAME
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        answer = {"status": "ok"} if self.path == "/health" else {"object": "list", "data": [{"id": "qwen2.5-coder-1.5b-instruct"}]}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"#;

const MODEL: &str = "fake-model";
const MODEL_SHA256: &str = "5496d6743cdde4fe98674e290e44b3220f5a42bf0c442eb207e88fd041e34d48";

/// The test's cache, port and fake phases; stops the server it started when dropped.
struct Local {
    ws: Workspace,
    dir: PathBuf,
    port: u16,
}

impl Local {
    fn new() -> Local {
        let ws = Workspace::new();
        let dir = ws.temp().join("cache");
        std::fs::create_dir_all(ws.temp().join("fake")).unwrap();
        std::fs::write(ws.temp().join("fake/llama-server"), FAKE_SERVER).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Local { ws, dir, port }
    }

    fn fake(&self) -> PathBuf {
        self.ws.temp().join("fake")
    }

    /// How many times the fake build ran to its end.
    fn builds(&self) -> usize {
        std::fs::read_to_string(self.fake().join("builds")).map_or(0, |text| text.lines().count())
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let fake = self.fake();
        let mut cmd = self.ws.tick_process();
        // The build says it started, waits while `slow` exists (a long compile), then leaves
        // the server where a real build would.
        let build = format!(
            "touch '{f}/started'; while [ -e '{f}/slow' ]; do sleep 0.1; done; \
             cp '{f}/llama-server' \"$1/llama-server\"; chmod +x \"$1/llama-server\"; \
             echo built >> '{f}/builds'",
            f = fake.display()
        );
        cmd.args(args)
            .env("TICK_LOCAL_DIR", &self.dir)
            .env("TICK_LOCAL_PORT", self.port.to_string())
            .env("TICK_LOCAL_BUILD_CMD", build)
            .env("TICK_LOCAL_FETCH_CMD", format!("printf {MODEL} > \"$1\""))
            .env("TICK_LOCAL_MODEL_SIZE", MODEL.len().to_string())
            .env("TICK_LOCAL_MODEL_SHA256", MODEL_SHA256)
            .env("TICK_LOCAL_NICE", "0");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let _ = self.run(&["model", "stop"]);
    }
}

fn err(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn wait_for(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn setup_builds_and_starts_once_and_a_second_setup_does_nothing_again() {
    let local = Local::new();
    let first = local.run(&["model", "setup"]);
    assert!(first.status.success(), "{first:#?}");
    let text = err(&first);
    assert_contains(&text, "local-model: build: running TICK_LOCAL_BUILD_CMD");
    assert_contains(&text, "local-model: check: the sha256 of the model");
    assert_contains(&text, "local-model: start: llama-server on 127.0.0.1:");
    assert_contains(&text, "expect 5-60 s to load the model");
    assert_contains(&text, "tick finds it by itself");
    assert_eq!(local.builds(), 1);
    assert!(local.dir.join("local-model.sh").exists());

    let status = local.run(&["model", "status"]);
    assert!(status.status.success(), "{status:#?}");
    assert_contains(
        &String::from_utf8_lossy(&status.stdout),
        "process: running, pid ",
    );

    let again = local.run(&["model", "setup"]);
    assert!(again.status.success(), "{again:#?}");
    let text = err(&again);
    assert_contains(&text, "llama-server already built");
    assert_contains(&text, "model already assembled and checked");
    assert_contains(&text, "already running");
    assert_eq!(local.builds(), 1, "the build did not run again");

    // With nothing configured, tick finds the server it started.
    let mut doctor = local.command(&["doctor"]);
    doctor.env(
        "TICK_LOCAL_SERVERS",
        format!("llamacpp=http://127.0.0.1:{}/v1", local.port),
    );
    let doctor = doctor.output().unwrap();
    assert_contains(
        &String::from_utf8_lossy(&doctor.stdout),
        "found on this machine: llama.cpp",
    );

    let stop = local.run(&["model", "stop"]);
    assert!(stop.status.success(), "{stop:#?}");
    assert_contains(&err(&stop), "local-model: stopped pid");
    let status = local.run(&["model", "status"]);
    assert_eq!(status.status.code(), Some(3), "{status:#?}");
}

#[test]
fn a_setup_killed_mid_build_is_resumed_by_the_next() {
    let local = Local::new();
    std::fs::write(local.fake().join("slow"), "").unwrap();
    let mut cmd = local.command(&["model", "setup"]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn().unwrap();
    wait_for(&local.fake().join("started"));
    // As Ctrl-C or a closed terminal would: the whole group, tick and the script with it.
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    assert_eq!(local.builds(), 0);
    assert!(
        !local.dir.join("bin/llama-server").exists(),
        "no server is in place after a killed build"
    );

    std::fs::remove_file(local.fake().join("slow")).unwrap();
    let resumed = local.run(&["model", "start"]);
    assert!(resumed.status.success(), "{resumed:#?}");
    let text = err(&resumed);
    assert_contains(&text, "local-model: build: running TICK_LOCAL_BUILD_CMD");
    assert_contains(&text, "local-model: ready after");
    assert_eq!(local.builds(), 1);
}
