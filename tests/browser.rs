//! The built book in a real browser, used as a reader would: headless Chromium against the book
//! served on 127.0.0.1. It types into the playground of chapters 1 and 2 and compares the
//! wavefronts shown with the bank model's, sees a bad expression explained inline, searches, checks
//! CUDA highlighting and KaTeX's fonts, and asserts that no request left 127.0.0.1. A screenshot of
//! each playground is kept in `target/browser-test/`.
//!
//! Without Chromium the test says so in one line and passes, except under CI (`CI=true`), which
//! must run it. `BCM_CHROMIUM` names the browser if it is not `chromium` on the `PATH`.

use std::{
    env,
    ffi::OsStr,
    fs,
    io::{BufRead, BufReader, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use bank_model::{Op, Request, Width, swizzle::Swizzle as CuteSwizzle};
use base64::{Engine, engine::general_purpose::STANDARD as BASE64};
use lane_addresses::{Swizzle, Tile};
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

/// `target/browser-test`: the rendered book and the screenshots.
fn artifacts() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("the target folder").join("browser-test")
}

fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = env::var_os("BCM_CHROMIUM") {
        return Some(path.into());
    }
    let path = env::var_os("PATH")?;
    env::split_paths(&path).map(|dir| dir.join("chromium")).find(|candidate| candidate.is_file())
}

/// The paths the server was asked for that it does not have.
type Missing = Arc<Mutex<Vec<String>>>;

/// Serves `root` on 127.0.0.1 at a free port while the test runs; returns the base URL.
fn serve(root: PathBuf, missing: Missing) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free local port");
    let base = format!("http://{}/", listener.local_addr().expect("bound"));
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (root, missing) = (root.clone(), missing.clone());
            thread::spawn(move || respond(&root, stream, &missing));
        }
    });
    base
}

fn respond(root: &Path, mut stream: TcpStream, missing: &Missing) {
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let relative = target.split(['?', '#']).next().unwrap_or("").trim_start_matches('/');
    let file = if relative.is_empty() || relative.ends_with('/') {
        root.join(relative).join("index.html")
    } else {
        root.join(relative)
    };
    let body = if relative.split('/').any(|part| part == "..") { None } else { fs::read(&file).ok() };
    let (status, body) = match body {
        Some(body) => ("200 OK", body),
        None => {
            missing.lock().unwrap().push(target.to_owned());
            ("404 Not Found", b"not found".to_vec())
        }
    };
    let kind = match file.extension().and_then(OsStr::to_str) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
}

/// Headless Chromium with one page, driven over the DevTools protocol (a WebSocket of JSON
/// commands, replies and events), every request of the page recorded.
struct Chromium {
    process: Child,
    socket: WebSocket<TcpStream>,
    /// The page's protocol session.
    session: Option<String>,
    next_id: u64,
    /// The URL of every request the page made.
    requests: Vec<String>,
    _profile: tempfile::TempDir,
}

impl Chromium {
    fn launch(path: &Path) -> Chromium {
        let profile = tempfile::tempdir().unwrap();
        // Besides headless, each flag keeps Chromium from reaching Google's hosts on its own.
        let mut process = Command::new(path)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .args(["--remote-debugging-port=0", "--window-size=1280,1600"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
        // Chromium names its protocol's address on stderr once it listens.
        let mut stderr = BufReader::new(process.stderr.take().expect("piped")).lines();
        let mut said = Vec::new();
        let address = loop {
            let Some(Ok(line)) = stderr.next() else {
                panic!("Chromium exited without listening:\n{}", said.join("\n"))
            };
            if let Some(address) = line.strip_prefix("DevTools listening on ") {
                break address.to_owned();
            }
            said.push(line);
        };
        thread::spawn(move || stderr.for_each(drop));
        let host = address.trim_start_matches("ws://").split('/').next().expect("ws://host:port/...");
        let stream = TcpStream::connect(host).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let (socket, _) = tungstenite::client(address.as_str(), stream).expect("the DevTools handshake");
        let mut chromium =
            Chromium { process, socket, session: None, next_id: 0, requests: Vec::new(), _profile: profile };
        let target = chromium.call("Target.createTarget", json!({ "url": "about:blank" }))["targetId"].clone();
        let attached = chromium.call("Target.attachToTarget", json!({ "targetId": target, "flatten": true }));
        chromium.session = attached["sessionId"].as_str().map(String::from);
        chromium.call("Network.enable", json!({}));
        chromium
    }

    /// Sends one command (to the page, once attached) and returns its result, recording the
    /// page's requests announced meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let mut command = json!({ "id": self.next_id, "method": method, "params": params });
        if let Some(session) = &self.session {
            command["sessionId"] = json!(session);
        }
        self.socket.send(Message::text(command.to_string())).unwrap();
        loop {
            let message = self.socket.read().unwrap_or_else(|e| panic!("{method}: no reply from Chromium: {e}"));
            let Message::Text(text) = message else { continue };
            let message: Value = serde_json::from_str(text.as_str()).unwrap();
            if message["method"] == "Network.requestWillBeSent" {
                self.requests.push(message["params"]["request"]["url"].as_str().unwrap_or_default().to_owned());
            }
            if message["id"] == self.next_id {
                assert!(message.get("error").is_none(), "{method}: {}", message["error"]);
                return message["result"].clone();
            }
        }
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value.
    fn eval(&mut self, expression: &str) -> Value {
        let params = json!({ "expression": expression, "awaitPromise": true, "returnByValue": true });
        let result = self.call("Runtime.evaluate", params);
        assert!(result.get("exceptionDetails").is_none(), "{expression}: {}", result["exceptionDetails"]);
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page.
    fn wait_for(&mut self, expression: &str, what: &str) {
        let start = Instant::now();
        while self.eval(expression) != Value::Bool(true) {
            assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what} ({expression})");
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        let loaded = format!("location.href === '{url}' && document.readyState === 'complete'");
        self.wait_for(&loaded, url);
    }

    /// Types `text` into the focused field, key by key.
    fn type_text(&mut self, text: &str) {
        for key in text.chars().map(String::from) {
            self.call("Input.dispatchKeyEvent", json!({ "type": "keyDown", "key": key, "text": key }));
            self.call("Input.dispatchKeyEvent", json!({ "type": "keyUp", "key": key }));
        }
    }

    /// Replaces the text of the field `selector`: selects it, as a reader would, and types over it.
    fn retype(&mut self, selector: &str, text: &str) {
        self.eval(&format!(
            "document.querySelector('{selector}').focus(); document.querySelector('{selector}').select()"
        ));
        self.type_text(text);
        let value = self.eval(&format!("document.querySelector('{selector}').value"));
        assert_eq!(value, text, "{selector} holds what was typed");
    }

    /// Saves the window, with `selector` scrolled to its top, as a PNG.
    fn screenshot(&mut self, selector: &str, file: &Path) {
        self.eval(&format!("document.querySelector('{selector}').scrollIntoView({{ block: 'start' }})"));
        let png = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        fs::write(file, BASE64.decode(png["data"].as_str().expect("image data")).unwrap()).unwrap();
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The playground's state, the wavefronts it shows and the error it shows.
fn shown(chromium: &mut Chromium) -> (String, String, String) {
    let mut text = |part: &str| {
        let value =
            chromium.eval(&format!("(document.querySelector('.bank-playground {part}') || {{}}).textContent || ''"));
        value.as_str().unwrap_or_default().to_owned()
    };
    let (wavefronts, error) = (text(".bp-wavefronts"), text(".bp-error"));
    let state = chromium.eval("document.querySelector('.bank-playground').dataset.state");
    (state.as_str().unwrap_or_default().to_owned(), wavefronts, error)
}

/// What does not fit the page's text column, as lines naming the element.
const MISFITS: &str = r#"(() => {
  const main = document.querySelector('main'), right = main.getBoundingClientRect().right, found = [];
  const name = el => el.tagName.toLowerCase() + ' "' + el.textContent.trim().slice(0, 40).replace(/\s+/g, ' ') + '"';
  if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) found.push('the page scrolls sideways');
  for (const el of main.querySelectorAll('table, pre, img, .katex-display, .bank-grid, .bank-playground')) {
    let scroller = el;
    while (scroller !== main && !(['auto', 'scroll'].includes(getComputedStyle(scroller).overflowX)
        && scroller.scrollWidth > scroller.clientWidth + 1)) scroller = scroller.parentElement;
    if (scroller !== main) {
      if (el.tagName === 'TABLE') found.push('a table scrolls: ' + name(el));
    } else if (el.getBoundingClientRect().right > right + 2) {
      found.push('wider than the column: ' + name(el));
    }
  }
  for (const label of main.querySelectorAll('.bp-bank > *, .bp-lane > *')) {
    const size = parseFloat(getComputedStyle(label).fontSize);
    if (label.textContent.length < 9 && label.getBoundingClientRect().height > 2.2 * size) found.push('a label breaks: ' + name(label));
  }
  return found;
})()"#;

fn wavefronts(request: Request) -> String {
    request.analyze().wavefronts.to_string()
}

#[test]
fn the_book_works_in_a_browser_and_stays_on_localhost() {
    let Some(path) = find_chromium() else {
        assert!(
            env::var("CI").as_deref() != Ok("true"),
            "CI must run the browser test: install Debian's `chromium` (or set BCM_CHROMIUM)"
        );
        eprintln!("browser test skipped: no `chromium` on the PATH (install Debian's chromium, or set BCM_CHROMIUM)");
        return;
    };
    let site = artifacts().join("book");
    xtask::book::render(&site).expect("the book builds");
    let missing = Missing::default();
    let base = serve(site.clone(), missing.clone());
    let mut chromium = Chromium::launch(&path);
    let answered = "document.querySelector('.bank-playground').dataset.state === 'answered'";

    // Chapter 1: an index expression, typed key by key.
    chromium.open(&format!("{base}ch01-banks.html"));
    chromium.wait_for(answered, "the playground");
    let first = shown(&mut chromium);
    assert_eq!(first.1, wavefronts(Request::strided(Op::Load, Width::W4, 2).unwrap()), "the page's first example");
    let expression = "(lane % 4) * 32 + lane / 4";
    chromium.retype(".bp-index", expression);
    let lanes = lane_addresses::index_addresses(expression, Width::W4).unwrap();
    let model = wavefronts(Request::new(Op::Load, Width::W4, lanes).unwrap());
    assert_eq!(shown(&mut chromium), ("answered".to_owned(), model.clone(), String::new()));
    assert_ne!(model, first.1, "the example changes the answer");
    chromium.screenshot(".bank-playground", &artifacts().join("playground-ch01.png"));

    // A bad expression is explained under the field, in the model's words.
    chromium.retype(".bp-index", "(lane * 2");
    let error = lane_addresses::index_addresses("(lane * 2", Width::W4).unwrap_err().to_string();
    let (state, _, shown_error) = shown(&mut chromium);
    assert_eq!((state.as_str(), shown_error.as_str()), ("error", error.as_str()));

    // CUDA blocks are highlighted with CUDA's keywords; KaTeX's fonts come from the book.
    let cuda_keywords = "Array.from(document.querySelectorAll('code.language-cuda .hljs-keyword'))\
                         .filter(k => k.textContent.startsWith('__')).length";
    assert!(chromium.eval(cuda_keywords).as_u64().unwrap_or(0) > 0, "CUDA qualifiers are highlighted");
    let katex_fonts = "document.fonts.ready.then(fonts => Array.from(fonts)\
                       .filter(f => f.family.startsWith('KaTeX') && f.status === 'loaded').length)";
    assert!(chromium.eval(katex_fonts).as_u64().unwrap_or(0) > 0, "KaTeX's fonts load");

    // Search finds the chapter.
    chromium.eval("document.getElementById('mdbook-search-toggle').click()");
    chromium.wait_for("document.activeElement === document.getElementById('mdbook-searchbar')", "the search bar");
    chromium.type_text("wavefronts");
    chromium.wait_for(
        "Array.from(document.querySelectorAll('#mdbook-searchresults a')).some(a => a.href.includes('ch01-banks.html'))",
        "search results",
    );

    // Chapter 2: a tile column, padding changed from 1 to 0.
    chromium.open(&format!("{base}ch02-padding.html"));
    chromium.wait_for(answered, "the tile playground");
    chromium.retype(".bp-padding", "0");
    let tile = Tile { rows: 32, columns: 32, padding: 0, swizzle: Swizzle::None };
    let lanes = tile.addresses("lane", "0", Width::W4).unwrap();
    let model = wavefronts(Request::new(Op::Load, Width::W4, lanes).unwrap());
    assert_eq!(shown(&mut chromium), ("answered".to_owned(), model, String::new()));
    chromium.screenshot(".bank-playground", &artifacts().join("playground-ch02.png"));

    // Chapter 9: a float4 column under CuTe's swizzles, one bit too few, then a refused one.
    chromium.open(&format!("{base}ch09-swizzle.html"));
    chromium.wait_for(answered, "the swizzle playground");
    let cute_column = |bits, shift| {
        let swizzle = Swizzle::Cute(CuteSwizzle::new(bits, 0, shift).unwrap());
        let lanes = Tile { rows: 32, columns: 8, padding: 0, swizzle }.addresses("lane", "2", Width::W16).unwrap();
        wavefronts(Request::new(Op::Load, Width::W16, lanes).unwrap())
    };
    assert_eq!(shown(&mut chromium), ("answered".to_owned(), cute_column(3, 3), String::new()));
    chromium.retype(".bp-cute", "2, 0, 3");
    assert_eq!(shown(&mut chromium), ("answered".to_owned(), cute_column(2, 3), String::new()));
    chromium.retype(".bp-cute", "3, 0, 1");
    let (state, _, shown_error) = shown(&mut chromium);
    assert_eq!(state, "error");
    assert_eq!(shown_error, CuteSwizzle::new(3, 0, 1).unwrap_err().to_string());
    chromium.screenshot(".bank-playground", &artifacts().join("playground-ch09.png"));

    // Every page fits a desktop and a phone: nothing wider than the text column, no table that
    // hides columns behind a scroll bar, no playground label broken inside a word. Wide display
    // math may scroll (it is never clipped).
    let pages: Vec<String> = fs::read_dir(&site)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".html") && !["print.html", "toc.html", "404.html"].contains(&name.as_str()))
        .collect();
    assert!(pages.len() >= 15, "{pages:?}");
    let mut misfits = Vec::new();
    for width in [1280, 400] {
        let metrics = json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600 });
        chromium.call("Emulation.setDeviceMetricsOverride", metrics);
        for page in &pages {
            chromium.open(&format!("{base}{page}"));
            chromium.eval("document.fonts.ready.then(() => true)");
            for misfit in chromium.eval(MISFITS).as_array().unwrap() {
                misfits.push(format!("{page} at {width} px: {}", misfit.as_str().unwrap()));
            }
        }
    }
    chromium.call("Emulation.clearDeviceMetricsOverride", json!({}));
    assert!(misfits.is_empty(), "{misfits:#?}");

    let requests = &chromium.requests;
    for part in ["ch01-banks.html", "bank-playground-wasm.js", ".woff2", "searchindex"] {
        assert!(requests.iter().any(|url| url.contains(part)), "the page requested {part}: {requests:#?}");
    }
    let away: Vec<&String> =
        requests.iter().filter(|url| !url.starts_with(&base) && !url.starts_with("data:")).collect();
    assert!(away.is_empty(), "requests left 127.0.0.1: {away:#?}");
    assert!(missing.lock().unwrap().is_empty(), "the book asked for files it lacks: {:?}", missing.lock().unwrap());
}
