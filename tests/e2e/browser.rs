//! A real headless Chromium (Debian's `chromium`), driven over the DevTools protocol on its
//! own WebSocket: open a page, evaluate JavaScript in it, click, take screenshots. Missing
//! Chromium fails the test, never skips it: `.ci/run` installs it, and `LOOPX_CHROMIUM` may
//! name another binary.

use std::io::BufRead;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

pub struct Browser {
    child: Child,
    socket: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("LOOPX_CHROMIUM") {
        return PathBuf::from(path);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        for name in ["chromium", "chromium-browser"] {
            let path = dir.join(name);
            if path.is_file() {
                return path;
            }
        }
    }
    panic!(
        "no Chromium: install Debian's `chromium` (`.ci/run` does) or set LOOPX_CHROMIUM to a Chromium binary"
    );
}

impl Browser {
    /// Starts Chromium headless with a fresh profile and opens one page on `about:blank`.
    pub fn start() -> Browser {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--window-size=1400,1000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("Chromium starts");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(at) = line.find("ws://") {
                    let _ = tx.send(line[at..].trim().to_owned());
                }
            }
        });
        let ws = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("Chromium prints its DevTools address");
        let rest = ws.trim_start_matches("ws://");
        let host = rest.split('/').next().expect("host:port");
        let stream = TcpStream::connect(host).expect("connect to DevTools");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let (socket, _) = tungstenite::client(ws.as_str(), stream).expect("WebSocket handshake");
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 1,
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("a target").to_owned();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_owned();
        browser.call("Page.enable", json!({}));
        browser.call("Runtime.enable", json!({}));
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser
    }

    /// One DevTools command; its result (events in between are skipped).
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .expect("send to Chromium");
        loop {
            let reply = self.socket.read().expect("read from Chromium");
            let Message::Text(text) = reply else { continue };
            let reply: Value = serde_json::from_str(text.as_str()).expect("JSON from Chromium");
            if reply["id"] == id {
                if let Some(error) = reply.get("error") {
                    panic!("{method} failed: {error}");
                }
                return reply["result"].clone();
            }
        }
    }

    pub fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// The value of a JavaScript expression in the page (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("`{expression}` threw: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page.
    pub fn wait_for(&mut self, what: &str, expression: &str, within: Duration) {
        let test = format!("Boolean({expression})");
        let shown = loopx_testkit::poll(within, || {
            (self.eval(&test) == Value::Bool(true)).then_some(())
        });
        if shown.is_none() {
            let body = self.eval("document.body ? document.body.innerText : ''");
            panic!("the page never showed {what} within {within:?}; it shows:\n{body}");
        }
    }

    /// A PNG of the page, written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64_decode(shot["data"].as_str().expect("image data"));
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(path, png).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        let [_, a, b, c] = n.to_be_bytes();
        out.extend_from_slice(&[a, b, c][..chunk.len() - 1]);
    }
    out
}

/// Where a test's screenshots go: `target/test-output/<test>/` (kept after the run).
pub fn output_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-output")
        .join(test);
    std::fs::create_dir_all(&dir).expect("test output dir");
    dir
}
