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
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use bank_model::{Op, Request, Width};
use headless_chrome::{
    Browser, LaunchOptions, Tab,
    browser::tab::ModifierKey,
    protocol::cdp::{Network, Page::CaptureScreenshotFormatOption, types::Event},
};
use lane_addresses::{Swizzle, Tile};

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

/// Evaluates `expression` in the page and returns its value as JSON.
fn eval(tab: &Tab, expression: &str) -> serde_json::Value {
    let result = tab.evaluate(expression, true).unwrap_or_else(|e| panic!("{expression}: {e}"));
    result.value.unwrap_or(serde_json::Value::Null)
}

/// Waits until `expression` is true in the page.
fn wait_for(tab: &Tab, expression: &str, what: &str) {
    let start = Instant::now();
    while eval(tab, expression) != serde_json::Value::Bool(true) {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what} ({expression})");
        thread::sleep(Duration::from_millis(50));
    }
}

/// Replaces the text of the field `selector` with `text`, typed key by key.
fn retype(tab: &Tab, selector: &str, text: &str) {
    tab.find_element(selector).unwrap().click().unwrap();
    tab.press_key_with_modifiers("a", Some(&[ModifierKey::Ctrl])).unwrap();
    tab.press_key("Backspace").unwrap();
    tab.type_str(text).unwrap();
    let value = eval(tab, &format!("document.querySelector('{selector}').value"));
    assert_eq!(value, text, "{selector} holds what was typed");
}

/// The playground's state, wavefronts shown and error shown.
fn shown(tab: &Tab, playground: &str) -> (String, String, String) {
    let text = |part: &str| {
        let value = eval(tab, &format!("(document.querySelector('{playground} {part}') || {{}}).textContent || ''"));
        value.as_str().unwrap_or_default().to_owned()
    };
    let state = eval(tab, &format!("document.querySelector('{playground}').dataset.state"));
    (state.as_str().unwrap_or_default().to_owned(), text(".bp-wavefronts"), text(".bp-error"))
}

/// Saves the window with `selector` at its top: the window rather than the element, whose clip
/// headless Chromium takes in page coordinates but reports in window coordinates.
fn screenshot(tab: &Tab, selector: &str, file: &str) {
    eval(tab, &format!("document.querySelector('{selector}').scrollIntoView({{ block: 'start' }})"));
    let png = tab.capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true).unwrap();
    fs::write(artifacts().join(file), png).unwrap();
}

fn wavefronts(request: Request) -> String {
    request.analyze().wavefronts.to_string()
}

#[test]
fn the_book_works_in_a_browser_and_stays_on_localhost() {
    let Some(chromium) = find_chromium() else {
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
    let base = serve(site, missing.clone());

    let options = LaunchOptions::default_builder()
        .path(Some(chromium))
        .headless(true)
        .sandbox(false)
        .window_size(Some((1280, 1600)))
        // With the defaults (no background networking, sync or first-run), these keep Chromium
        // from reaching Google's hosts on its own.
        .args(vec![OsStr::new("--disable-quic"), OsStr::new("--disable-component-update")])
        .build()
        .unwrap();
    let browser = Browser::new(options).expect("Chromium starts");
    let tab = browser.new_tab().unwrap();
    tab.set_default_timeout(Duration::from_secs(20));
    let requests = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = requests.clone();
    tab.add_event_listener(Arc::new(move |event: &Event| {
        if let Event::NetworkRequestWillBeSent(sent) = event {
            sink.lock().unwrap().push(sent.params.request.url.clone());
        }
    }))
    .unwrap();
    tab.call_method(Network::Enable {
        max_total_buffer_size: None,
        max_resource_buffer_size: None,
        max_post_data_size: None,
        report_direct_socket_traffic: None,
        enable_durable_messages: None,
    })
    .unwrap();
    fs::create_dir_all(artifacts()).unwrap();

    // Chapter 1: an index expression, typed key by key.
    tab.navigate_to(&format!("{base}ch01-banks.html")).unwrap().wait_until_navigated().unwrap();
    let playground = ".bank-playground";
    wait_for(&tab, "document.querySelector('.bank-playground').dataset.state === 'answered'", "the playground");
    let first = shown(&tab, playground);
    assert_eq!(first.1, wavefronts(Request::strided(Op::Load, Width::W4, 2).unwrap()), "the page's first example");
    let expression = "(lane % 4) * 32 + lane / 4";
    retype(&tab, ".bp-index", expression);
    let lanes = lane_addresses::index_addresses(expression, Width::W4).unwrap();
    let model = wavefronts(Request::new(Op::Load, Width::W4, lanes).unwrap());
    assert_eq!(shown(&tab, playground), ("answered".to_owned(), model.clone(), String::new()));
    assert_ne!(model, first.1, "the example changes the answer");
    screenshot(&tab, playground, "playground-ch01.png");

    // A bad expression is explained under the field, in the model's words.
    retype(&tab, ".bp-index", "(lane * 2");
    let error = lane_addresses::index_addresses("(lane * 2", Width::W4).unwrap_err().to_string();
    let (state, _, shown_error) = shown(&tab, playground);
    assert_eq!((state.as_str(), shown_error.as_str()), ("error", error.as_str()));

    // CUDA blocks are highlighted with CUDA's keywords; KaTeX's fonts come from the book.
    let cuda_keywords = "Array.from(document.querySelectorAll('code.language-cuda .hljs-keyword'))\
                         .filter(k => k.textContent.startsWith('__')).length";
    assert!(eval(&tab, cuda_keywords).as_u64().unwrap_or(0) > 0, "CUDA qualifiers are highlighted");
    let katex_fonts = "document.fonts.ready.then(fonts => Array.from(fonts)\
                       .filter(f => f.family.startsWith('KaTeX') && f.status === 'loaded').length)";
    assert!(eval(&tab, katex_fonts).as_u64().unwrap_or(0) > 0, "KaTeX's fonts load");

    // Search finds the chapter.
    tab.find_element("#mdbook-search-toggle").unwrap().click().unwrap();
    tab.wait_until_visible("#mdbook-searchbar").unwrap().click().unwrap();
    tab.type_str("wavefronts").unwrap();
    wait_for(
        &tab,
        "Array.from(document.querySelectorAll('#mdbook-searchresults a')).some(a => a.href.includes('ch01-banks.html'))",
        "search results",
    );

    // Chapter 2: a tile column, padding changed from 1 to 0.
    tab.navigate_to(&format!("{base}ch02-padding.html")).unwrap().wait_until_navigated().unwrap();
    wait_for(&tab, "document.querySelector('.bank-playground').dataset.state === 'answered'", "the tile playground");
    retype(&tab, ".bp-padding", "0");
    let tile = Tile { rows: 32, columns: 32, padding: 0, swizzle: Swizzle::None };
    let lanes = tile.addresses("lane", "0", Width::W4).unwrap();
    let model = wavefronts(Request::new(Op::Load, Width::W4, lanes).unwrap());
    assert_eq!(shown(&tab, playground), ("answered".to_owned(), model, String::new()));
    screenshot(&tab, playground, "playground-ch02.png");

    let requests = requests.lock().unwrap().clone();
    for part in ["ch01-banks.html", "bank-playground-wasm.js", ".woff2", "searchindex"] {
        assert!(requests.iter().any(|url| url.contains(part)), "the page requested {part}: {requests:#?}");
    }
    let away: Vec<&String> =
        requests.iter().filter(|url| !url.starts_with(&base) && !url.starts_with("data:")).collect();
    assert!(away.is_empty(), "requests left 127.0.0.1: {away:#?}");
    assert!(missing.lock().unwrap().is_empty(), "the book asked for files it lacks: {:?}", missing.lock().unwrap());
}
